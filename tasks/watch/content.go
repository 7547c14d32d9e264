package watch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of what an item carries for a person to read (SPEC §20).
const (
	// SummaryMax is the most characters (runes) a summary holds.
	SummaryMax = 280
	// DiffMaxLines is the most lines a change lists each way.
	DiffMaxLines = 20
	// MaxLines and MaxLineLen bound the lines a snapshot keeps of one
	// page or JSON item to tell its changed lines next time.
	MaxLines   = 40
	MaxLineLen = 200
)

// Summary is text, already plain, as an item's summary: white space
// collapsed, at most SummaryMax characters, cut between characters and
// ending a cut one in "…". The title is left out where the text starts
// with it, so a summary that only repeats the title is empty.
func Summary(text, title string) string {
	s := strings.Join(strings.FieldsFunc(text, unicode.IsSpace), " ")
	if t := strings.Join(strings.Fields(title), " "); t != "" {
		cut, ok := strings.CutSuffix(t, "…") // a title cut from the text itself
		if rest, ok2 := strings.CutPrefix(s, cut); ok && ok2 && rest != "" {
			s = "…" + rest // "… word" after a whole word, "…rd" inside one
		} else if rest, ok := strings.CutPrefix(s, t); ok && (rest == "" || rest[0] == ' ') {
			s = strings.TrimLeft(rest, " ")
		}
	}
	return clip(s, SummaryMax)
}

// clip cuts s to at most n characters, the last of a cut one being "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return strings.TrimRightFunc(s[:j], unicode.IsSpace) + "…"
		}
		i++
	}
	return s
}

// Lines is text (plain, its lines apart) as the lines an item keeps for
// its changed lines: each trimmed and collapsed, empty ones dropped, at
// most MaxLines of at most MaxLineLen characters.
func Lines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		l = strings.Join(strings.FieldsFunc(l, unicode.IsSpace), " ")
		if l == "" {
			continue
		}
		if len(out) == MaxLines {
			break
		}
		out = append(out, clip(l, MaxLineLen))
	}
	return out
}

// lineDiff is what after gained over before and what it lost, as whole
// lines in after's and before's order, at most DiffMaxLines each. A line
// present as many times on both sides is unchanged, wherever it moved.
func lineDiff(before, after []string) (added, removed []string) {
	count := make(map[string]int, len(before))
	for _, l := range before {
		count[l]++
	}
	for _, l := range after {
		if count[l] > 0 {
			count[l]--
			continue
		}
		if len(added) < DiffMaxLines {
			added = append(added, l)
		}
	}
	for _, l := range before {
		if count[l] > 0 {
			count[l]--
			if len(removed) < DiffMaxLines {
				removed = append(removed, l)
			}
		}
	}
	return added, removed
}
