package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Weekly runs on some days of the week at a wall-clock time in a zone:
// weekly mon 08:00, weekly mon,thu 18:30 Europe/Berlin, or the Chinese
// form (chinese.go).
type Weekly struct {
	Days []time.Weekday // sorted, no repeats
	Daily
}

var _ Schedule = Weekly{}

// KindWeekly is the kind of a Weekly schedule.
const KindWeekly = "weekly"

// Kind returns "weekly".
func (w Weekly) Kind() string { return KindWeekly }

// String returns e.g. "weekly mon,thu 08:00 Asia/Shanghai".
func (w Weekly) String() string {
	names := make([]string, len(w.Days))
	for i, d := range w.Days {
		names[i] = dayNames[d]
	}
	return fmt.Sprintf("weekly %s %02d:%02d%s", strings.Join(names, ","), w.Hour, w.Minute, zoneSuffix(w.loc()))
}

// Next returns the first run strictly after `after`, under the same
// wall-clock rules as Daily: a time in a DST gap runs at the first
// existing minute after it, a time that occurs twice runs once.
func (w Weekly) Next(after time.Time) (time.Time, error) {
	loc := w.loc()
	la := after.In(loc)
	y, mo, dd := la.Date()
	day := time.Date(y, mo, dd, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
	today := civil(la).Truncate(24 * time.Hour)
	for i := 0; i < 16; i++ {
		if slices.Contains(w.Days, day.Weekday()) {
			f, ok := w.fire(day)
			if !ok && !day.Before(today) {
				return time.Time{}, noSuchTime(day.Add(time.Duration(w.Hour)*time.Hour+time.Duration(w.Minute)*time.Minute), loc)
			}
			if ok && f.After(after) {
				return f, nil
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}, noSuchTime(day, loc)
}

// dayNames are the canonical short names, by time.Weekday.
var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// dayWords maps what people type to a weekday.
var dayWords = func() map[string]time.Weekday {
	m := map[string]time.Weekday{
		"sun": time.Sunday, "sunday": time.Sunday, "mon": time.Monday, "monday": time.Monday,
		"tue": time.Tuesday, "tues": time.Tuesday, "tuesday": time.Tuesday,
		"wed": time.Wednesday, "wednesday": time.Wednesday, "thu": time.Thursday, "thur": time.Thursday,
		"thurs": time.Thursday, "thursday": time.Thursday, "fri": time.Friday, "friday": time.Friday,
		"sat": time.Saturday, "saturday": time.Saturday,
	}
	for w, d := range chineseDayWords {
		m[w] = d
	}
	return m
}()

// isDayList reports whether s reads as one or more weekdays ("mon",
// "mon,thu", "monday").
func isDayList(s string) bool {
	_, ok := parseDays(s)
	return ok
}

// parseDays reads "mon", "mon,thu", and Chinese days apart (split by an
// ideographic comma) or together, one character a day.
func parseDays(s string) ([]time.Weekday, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	var parts []string
	if strings.ContainsAny(s, ",/"+ideographicComma) {
		parts = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || string(r) == ideographicComma || r == '/' })
	} else if _, ok := dayWords[s]; ok {
		parts = []string{s}
	} else if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x80 }) {
		for _, r := range s { // one Chinese day per rune
			parts = append(parts, string(r))
		}
	} else {
		parts = []string{s}
	}
	var days []time.Weekday
	for _, p := range parts {
		p = strings.TrimSpace(p)
		d, ok := dayWords[p]
		if !ok && len(p) > 4 { // mondays
			d, ok = dayWords[strings.TrimSuffix(p, "s")]
		}
		if !ok {
			return nil, false
		}
		if !slices.Contains(days, d) {
			days = append(days, d)
		}
	}
	slices.Sort(days)
	return days, len(days) > 0
}

// weekly reads "weekly [on] <days> [at] HH:MM [Zone]".
func (p *parser) weekly(args []string) (Schedule, error) {
	const usage = `"weekly" needs a day and a time, like "weekly mon 08:00" or "weekly mon,thu 18:30 Europe/Berlin"`
	if len(args) > 0 && strings.EqualFold(args[0], "on") {
		args = args[1:]
	}
	if len(args) < 2 {
		return nil, p.errc(len([]rune(p.text)), "weekly_needs_day", nil, "%s", usage)
	}
	days, ok := parseDays(args[0])
	if !ok {
		return nil, p.errc(p.pos(args[0]), "unknown_day", []any{args[0]},
			"unknown day %q; use mon, tue, wed, thu, fri, sat or sun (several as mon,thu)", args[0])
	}
	d, err := p.daily(args[1:])
	if err != nil {
		return nil, err
	}
	return Weekly{Days: days, Daily: d.(Daily)}, nil
}
