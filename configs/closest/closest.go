// Package closest finds the known name a person most likely meant when
// they typed one herald does not know: a config key, a recipient name, a
// time zone, a command.
package closest

import "strings"

// Name returns the candidate closest to name (case ignored) when it is
// close enough to be a slip of the keyboard — at most one edit for short
// names, a third of the name's length for longer ones — else "".
func Name(name string, candidates []string) string {
	best, bestD := "", 0
	low := strings.ToLower(name)
	for _, c := range candidates {
		d := Distance(low, strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD == 0 && best == name || bestD > max(1, len([]rune(best))/3) {
		return ""
	}
	return best
}

// Distance counts the single-letter insertions, deletions, substitutions
// and swaps of neighbours that turn a into b.
func Distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// Zones are the IANA zones most often meant, the candidates for a
// misspelt zone (the binary's tzdata cannot be listed).
var Zones = []string{
	"UTC", "Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei", "Asia/Macau", "Asia/Tokyo", "Asia/Seoul",
	"Asia/Singapore", "Asia/Kolkata", "Asia/Dubai", "Asia/Bangkok", "Asia/Jakarta", "Asia/Kuala_Lumpur",
	"Asia/Manila", "Asia/Ho_Chi_Minh", "Asia/Urumqi", "Europe/London", "Europe/Paris", "Europe/Berlin",
	"Europe/Madrid", "Europe/Rome", "Europe/Amsterdam", "Europe/Zurich", "Europe/Stockholm", "Europe/Moscow",
	"Europe/Istanbul", "Europe/Dublin", "Europe/Lisbon", "America/New_York", "America/Chicago",
	"America/Denver", "America/Los_Angeles", "America/Phoenix", "America/Anchorage", "America/Toronto",
	"America/Vancouver", "America/Mexico_City", "America/Sao_Paulo", "America/Buenos_Aires",
	"Pacific/Auckland", "Pacific/Honolulu", "Australia/Sydney", "Australia/Melbourne", "Australia/Perth",
	"Africa/Cairo", "Africa/Johannesburg", "Africa/Lagos", "Africa/Nairobi",
}
