package schedule

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Every runs at a fixed interval measured from the end of the last run.
type Every struct {
	Interval time.Duration
}

var _ Schedule = Every{}

// Next returns after + Interval.
func (e Every) Next(after time.Time) (time.Time, error) { return after.Add(e.Interval), nil }

// Kind returns "every".
func (e Every) Kind() string { return KindEvery }

// String returns e.g. "every 30m", "every 1h30m", "every 2d".
func (e Every) String() string { return "every " + FormatInterval(e.Interval) }

// FormatInterval renders d the way the grammar reads it: whole days as
// "2d", otherwise Go's notation without zero tails ("1h30m", "90m" → "1h30m").
func FormatInterval(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// unitWord is a word for an interval's unit.
type unitWord struct {
	word string
	unit time.Duration
}

var unitWords = append([]unitWord{
	// longest first within a shared prefix
	{"milliseconds", time.Millisecond}, {"millisecond", time.Millisecond}, {"ms", time.Millisecond},
	{"seconds", time.Second}, {"second", time.Second}, {"secs", time.Second}, {"sec", time.Second}, {"s", time.Second},
	{"minutes", time.Minute}, {"minute", time.Minute}, {"mins", time.Minute}, {"min", time.Minute}, {"m", time.Minute},
	{"hours", time.Hour}, {"hour", time.Hour}, {"hrs", time.Hour}, {"hr", time.Hour}, {"h", time.Hour},
	{"days", 24 * time.Hour}, {"day", 24 * time.Hour}, {"d", 24 * time.Hour},
	{"weeks", 7 * 24 * time.Hour}, {"week", 7 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
}, chineseUnitWords...)

// parseInterval reads "30m", "1h30m", "1.5h", "30 minutes", "1d12h" and
// the same with Chinese units; a unit without a number counts once
// ("hour").
func parseInterval(s string) (time.Duration, problem) {
	s = strings.ToLower(strings.ReplaceAll(s, " ", ""))
	if s == "" {
		return 0, problem{en: "missing interval", code: "missing_interval"}
	}
	if s == "half-hour" || s == "halfhour" || slices.Contains(chineseHalfHour, s) {
		return 30 * time.Minute, problem{}
	}
	var total float64
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num := 1.0
		if i > 0 {
			v, err := strconv.ParseFloat(s[:i], 64)
			if err != nil {
				return 0, problem{en: "bad number " + strconv.Quote(s[:i]), code: "bad_number", args: []any{strconv.Quote(s[:i])}}
			}
			num = v
		} else if total != 0 {
			return 0, problem{en: "bad interval: " + strconv.Quote(s), code: "bad_interval", args: []any{strconv.Quote(s)}}
		}
		s = s[i:]
		matched := false
		for _, u := range unitWords {
			if strings.HasPrefix(s, u.word) {
				total += num * float64(u.unit)
				s = s[len(u.word):]
				matched = true
				break
			}
		}
		if !matched {
			if s == "" {
				return 0, problem{en: "the interval needs a unit, like 30m, 2h or 1d", code: "needs_unit"}
			}
			return 0, problem{en: "unknown interval unit " + strconv.Quote(firstRunes(s, 8)) + "; use m, h or d, like 30m, 2h or 1d",
				code: "bad_unit", args: []any{strconv.Quote(firstRunes(s, 8))}}
		}
		if total > float64(MaxInterval) || math.IsNaN(total) {
			return 0, problem{en: "the interval is longer than 366d", code: "too_long"}
		}
	}
	d := time.Duration(total).Round(time.Millisecond)
	if d < MinInterval {
		return 0, problem{en: "the interval must be at least 1m", code: "too_short"}
	}
	return d, problem{}
}

// problem is a finding: its English message, and its code and arguments
// for a catalogue; the zero value is none.
type problem struct {
	en   string
	code string
	args []any
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

func (p *parser) every(args []string) (Schedule, error) {
	if len(args) == 0 {
		return nil, p.errf(len([]rune(p.text)), `"every" needs an interval, like "every 30m" or "every 2h"`)
	}
	d, msg := parseInterval(strings.Join(args, ""))
	if msg.en != "" {
		return nil, p.errc(p.pos(args[0]), msg.code, msg.args, "%s", msg.en)
	}
	return Every{Interval: d}, nil
}

// ParseDuration reads a duration the way `every` does ("30m", "1h30m",
// "2d", "90 minutes", Chinese units), between MinInterval and MaxInterval.
// Its errors are *ParseError.
func ParseDuration(text string) (time.Duration, error) {
	s := Normalize(text)
	d, msg := parseInterval(s)
	if msg.en != "" {
		return 0, &ParseError{Text: s, Msg: msg.en, Code: msg.code, Args: msg.args}
	}
	return d, nil
}
