package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Daily runs once per local date at a wall-clock time in a zone.
type Daily struct {
	Hour, Minute int
	Location     *time.Location
}

var _ Schedule = Daily{}

// Kind returns "daily".
func (d Daily) Kind() string { return KindDaily }

// String returns e.g. "daily 08:00 Asia/Shanghai".
func (d Daily) String() string {
	return fmt.Sprintf("daily %02d:%02d%s", d.Hour, d.Minute, zoneSuffix(d.loc()))
}

// Zone returns the zone the schedule's wall-clock times are read in.
func (d Daily) Zone() *time.Location { return d.loc() }

func (d Daily) loc() *time.Location {
	if d.Location == nil {
		return time.UTC
	}
	return d.Location
}

// fire returns the run instant planned for local date day (a civil
// midnight): the wall time itself, or the first existing minute after it.
func (d Daily) fire(day time.Time) (time.Time, bool) {
	return resolve(day.Add(time.Duration(d.Hour)*time.Hour+time.Duration(d.Minute)*time.Minute), d.loc())
}

// Next returns the first run strictly after `after`. The run planned for a
// date whose time falls in a DST gap moves to the first existing minute
// after it; if that lands on the local date of the next planned run, the
// later one is dropped, so no local date sees two runs.
func (d Daily) Next(after time.Time) (time.Time, error) {
	loc := d.loc()
	la := after.In(loc)
	y, mo, dd := la.Date()
	day := time.Date(y, mo, dd, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
	prev, havePrev := d.fire(day.AddDate(0, 0, -1))
	for i := 0; i < 8; i++ {
		f, ok := d.fire(day)
		if !ok {
			if !day.Before(civil(la).Truncate(24 * time.Hour)) {
				return time.Time{}, noSuchTime(day.Add(time.Duration(d.Hour)*time.Hour+time.Duration(d.Minute)*time.Minute), loc)
			}
			havePrev = false
			day = day.AddDate(0, 0, 1)
			continue
		}
		accepted := !havePrev || localDate(f, loc).After(localDate(prev, loc))
		if accepted && f.After(after) {
			return f, nil
		}
		prev, havePrev = f, true
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}, noSuchTime(day, loc)
}

func localDate(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func (p *parser) daily(args []string) (Schedule, error) {
	if len(args) > 0 && strings.EqualFold(args[0], "at") {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, p.errc(len([]rune(p.text)), "daily_needs_time", nil, `"daily" needs a time, like "daily 08:00" or "daily 08:00 Asia/Shanghai"`)
	}
	loc := p.def
	if len(args) > 1 && looksLikeZone(args[len(args)-1]) {
		z, err := p.zone(args[len(args)-1])
		if err != nil {
			return nil, err
		}
		loc = z
		args = args[:len(args)-1]
	}
	h, m, msg := parseClock(strings.Join(args, ""))
	if msg != "" {
		return nil, p.errc(p.pos(args[0]), "bad_clock", nil, "%s", msg)
	}
	return Daily{Hour: h, Minute: m, Location: loc}, nil
}

// parseClock reads "08:00", "8:00", "8am", "8:30pm", and the Chinese
// clock forms (chinese.go): an hour word, perhaps a minute or "half",
// perhaps after a part of the day.
func parseClock(s string) (hour, minute int, msg string) {
	const usage = "the time must be HH:MM on a 24-hour clock, like 08:00 or 21:30"
	s = strings.ToLower(s)
	pm, noon, am, cnPM := false, false, false, false
	for _, p := range chinesePeriods {
		if strings.HasPrefix(s, p.word) {
			s, cnPM, noon = s[len(p.word):], p.pm, p.noon
			break
		}
	}
	switch {
	case strings.HasSuffix(s, "am"):
		s, am = strings.TrimSuffix(s, "am"), true
	case strings.HasSuffix(s, "pm"):
		s, pm = strings.TrimSuffix(s, "pm"), true
	}
	var hs, ms string
	switch {
	case strings.Contains(s, ":"):
		hs, ms, _ = strings.Cut(s, ":")
	case strings.ContainsAny(s, strings.Join(chineseHourWords, "")):
		for _, sep := range chineseHourWords {
			if a, b, ok := strings.Cut(s, sep); ok {
				hs, ms = a, b
				break
			}
		}
		for _, suffix := range chineseMinuteEnds {
			ms = strings.TrimSuffix(ms, suffix)
		}
		switch ms {
		case "":
			ms = "00"
		case chineseHalf:
			ms = "30"
		}
	case am || pm:
		hs, ms = s, "00"
	default:
		return 0, 0, usage
	}
	if len(hs) == 0 || len(hs) > 2 || len(ms) == 0 || len(ms) > 2 {
		return 0, 0, usage
	}
	h, err1 := strconv.Atoi(hs)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || h < 0 || m < 0 || m > 59 || strings.ContainsAny(hs+ms, "+-") {
		return 0, 0, usage
	}
	switch {
	case am || pm:
		if h < 1 || h > 12 {
			return 0, 0, usage
		}
		if am && h == 12 {
			h = 0
		}
		if pm && h < 12 {
			h += 12
		}
	case cnPM && h < 12, noon && h < 11:
		h += 12
	}
	if h > 23 {
		return 0, 0, usage
	}
	return h, m, ""
}
