package schedule

import (
	"strings"
	"time"
)

// At runs once, at an absolute instant.
type At struct {
	Time time.Time
	text string // canonical timestamp text
}

var _ Schedule = At{}

// Next returns the instant if it is after `after`, else ErrNoMore.
func (a At) Next(after time.Time) (time.Time, error) {
	if a.Time.After(after) {
		return a.Time, nil
	}
	return time.Time{}, ErrNoMore
}

// Kind returns "at".
func (a At) Kind() string { return KindAt }

// String returns e.g. "at 2026-12-01T09:00:00+08:00" or
// "at 2026-12-01 09:00 Asia/Shanghai".
func (a At) String() string {
	if a.text != "" {
		return "at " + a.text
	}
	return "at " + a.Time.Format(time.RFC3339Nano)
}

var localLayouts = []string{
	"2006-01-02 15:04",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02T15:04:05",
	"2006/01/02 15:04",
}

func (p *parser) at(args []string) (Schedule, error) {
	const usage = `"at" needs a time, like "at 2026-12-01T09:00:00+08:00" or "at 2026-12-01 09:00 Asia/Shanghai"`
	if len(args) == 0 {
		return nil, p.errf(len([]rune(p.text)), usage)
	}
	if len(args) == 1 {
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
			if t, err := time.Parse(layout, strings.ToUpper(args[0])); err == nil {
				return At{Time: t}, nil
			}
		}
	}
	loc, explicit := p.def, false
	if len(args) > 1 && looksLikeZone(args[len(args)-1]) {
		z, err := p.zone(args[len(args)-1])
		if err != nil {
			return nil, err
		}
		loc, explicit = z, true
		args = args[:len(args)-1]
	}
	text := strings.Join(args, " ")
	for _, layout := range localLayouts {
		w, err := time.Parse(layout, text)
		if err != nil {
			continue
		}
		t, ok := resolve(w, loc)
		if !ok {
			return nil, noSuchTime(w, loc)
		}
		canon := w.Format("2006-01-02 15:04")
		if w.Second() != 0 {
			canon = w.Format("2006-01-02 15:04:05")
		}
		suffix := zoneSuffix(loc)
		if suffix == "" && explicit {
			suffix = " " + loc.String()
		}
		return At{Time: t, text: canon + suffix}, nil
	}
	return nil, p.errf(p.pos(args[0]), usage)
}
