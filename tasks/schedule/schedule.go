// Package schedule parses the schedule grammar shared by chat commands and
// config files (docs/configuration.md, Configuration: schedules) and computes run times under real zone rules.
//
//	every <duration>               every 30m, every 1h30m, every 1d (minimum 1m)
//	daily HH:MM [Area/City]        daily 08:00 Asia/Shanghai
//	weekly <days> HH:MM [Area/City] weekly mon 08:00, weekly mon,thu 18:30
//	at <timestamp>                 at 2026-12-01T09:00:00+08:00, at 2026-12-01 09:00 [Area/City]
//	cron <5 fields> [Area/City]    cron 0 9 * * MON-FRI Europe/London
//
// The Chinese forms people type are accepted too (chinese.go holds all
// of their words), as are full-width digits, colons and spaces.
//
// Wall-clock rules: a local time that falls in a DST gap runs at the first
// existing minute after it (searched minute by minute for at most 3 days,
// else ErrNoSuchTime); a local time that occurs twice runs once, at its first
// occurrence; a daily schedule never fires twice on one local date.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone rules travel with the binary

	"github.com/herald-bridge/herald/tasks/watch"
)

// Schedule yields the run times of a task.
type Schedule interface {
	// Next returns the first run time strictly after `after`. For `every`,
	// after is the end of the last run. For `at`, Next returns the instant if
	// it is after `after`, else ErrNoMore.
	Next(after time.Time) (time.Time, error)
	// String returns the canonical text, which Parse accepts and maps to an
	// equal schedule (e.g. "every 30m", "daily 08:00 Asia/Shanghai").
	String() string
	// Kind is "every", "daily", "weekly", "at" or "cron".
	Kind() string
}

// Kinds of schedule.
const (
	KindEvery = "every"
	KindDaily = "daily"
	KindAt    = "at"
	KindCron  = "cron"
)

// MinInterval is the shortest `every` interval.
const MinInterval = time.Minute

// MaxInterval is the longest `every` interval.
const MaxInterval = 366 * 24 * time.Hour

// maxGapMinutes bounds the search for the first existing minute after a
// local time that falls in a DST gap (3 days).
const maxGapMinutes = 3 * 24 * 60

var (
	// ErrNoMore reports that a schedule has no further run (an `at`
	// schedule that already fired).
	ErrNoMore = errors.New("schedule: no more runs")
	// ErrNoSuchTime reports a local time with no existing minute within 3
	// days after it. It is returned classified as watch.Schema: retrying
	// cannot help.
	ErrNoSuchTime = errors.New("schedule: local time does not exist")
)

// ParseError describes text that is not a schedule. Its message is plain
// English and says what would be accepted; Pos is the 0-based rune offset
// in Text (the input after whitespace and full-width folding) where the
// problem starts. Code and Args name the problem for a catalogue that
// words it in another language ("" for a problem it words only
// generally); the conversation's catalogue keys it "schedule.<code>".
type ParseError struct {
	Text string
	Pos  int
	Msg  string
	Code string
	Args []any
}

func (e *ParseError) Error() string {
	return "invalid schedule " + quoteShort(e.Text) + ": " + e.Msg
}

// Coded gives the error's code for a catalogue ("schedule.invalid" for a
// problem with no code of its own), its arguments and its English message.
func (e *ParseError) Coded() (code string, args []any, english string) {
	if e.Code == "" {
		return "schedule.invalid", nil, e.Msg
	}
	return "schedule." + e.Code, e.Args, e.Msg
}

// Usage is a one-line summary of the grammar for error messages.
const Usage = `every 30m | daily 08:00 [Area/City] | weekly mon 08:00 [Area/City] | at 2026-12-01 09:00 [Area/City] | cron 0 9 * * 1-5 [Area/City]`

func quoteShort(s string) string {
	r := []rune(s)
	if len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// Parse reads a schedule. Local times without a zone are read in
// defaultZone (UTC when nil).
func Parse(text string, defaultZone *time.Location) (Schedule, error) {
	if defaultZone == nil {
		defaultZone = time.UTC
	}
	s := Normalize(text)
	p := &parser{text: s, def: defaultZone}
	if s == "" {
		return nil, p.errc(0, "empty", nil, "the schedule is empty; use %s", Usage)
	}
	if strings.HasPrefix(s, chineseOpener) {
		return p.chinese()
	}
	fields := strings.Fields(s)
	switch strings.ToLower(fields[0]) {
	case KindEvery:
		if len(fields) > 2 && isDayList(fields[1]) { // every monday 08:00
			return p.weekly(fields[1:])
		}
		return p.every(fields[1:])
	case KindDaily:
		return p.daily(fields[1:])
	case KindWeekly:
		return p.weekly(fields[1:])
	case KindAt:
		return p.at(fields[1:])
	case KindCron:
		return p.cron(fields[1:])
	}
	return nil, p.errc(0, "unknown", []any{fields[0]}, "unknown schedule %q; use %s", fields[0], Usage)
}

// Normalize folds full-width ASCII (０８：００) and ideographic spaces to
// ASCII, collapses runs of whitespace and trims the ends.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E:
			r -= 0xFEE0
		case r == 0x3000 || r == 0x00A0:
			r = ' '
		}
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

type parser struct {
	text string
	def  *time.Location
}

func (p *parser) errf(pos int, format string, args ...any) error {
	return &ParseError{Text: p.text, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// errc is errf with the problem's code and the arguments its wording in
// another language takes.
func (p *parser) errc(pos int, code string, codeArgs []any, format string, args ...any) error {
	return &ParseError{Text: p.text, Pos: pos, Msg: fmt.Sprintf(format, args...), Code: code, Args: codeArgs}
}

// pos returns the rune offset of the first occurrence of sub in the text.
func (p *parser) pos(sub string) int {
	i := strings.Index(p.text, sub)
	if i < 0 {
		return 0
	}
	return len([]rune(p.text[:i]))
}

// noSuchTime returns ErrNoSuchTime classified as a schema failure.
func noSuchTime(wall time.Time, loc *time.Location) error {
	return watch.Errorf(watch.Schema, "%w: no minute from %s in %s exists within 3 days",
		ErrNoSuchTime, wall.Format("2006-01-02 15:04"), loc)
}

// zone reads an IANA zone name. Abbreviations such as CST are refused:
// they name several different offsets.
func (p *parser) zone(name string) (*time.Location, error) {
	switch name {
	case "UTC", "Etc/UTC":
		return time.UTC, nil
	case "":
		return nil, p.errc(p.pos(name), "missing_zone", nil, "missing time zone")
	}
	unknown := []any{name}
	if !strings.Contains(name, "/") && name != "GMT" {
		if isAbbreviation(name) {
			return nil, p.errc(p.pos(name), "zone_abbreviation", []any{name},
				"time zone %q is an abbreviation that names several offsets; use an IANA name such as Asia/Shanghai or America/Chicago", name)
		}
		return nil, p.errc(p.pos(name), "unknown_zone", unknown, "unknown time zone %q; use an IANA name such as Asia/Shanghai", name)
	}
	if strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return nil, p.errc(p.pos(name), "unknown_zone", unknown, "unknown time zone %q; use an IANA name such as Asia/Shanghai", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		// People type asia/shanghai; zone names are case-sensitive.
		if t := titleZone(name); t != name {
			if loc, err2 := time.LoadLocation(t); err2 == nil {
				return loc, nil
			}
		}
		return nil, p.errc(p.pos(name), "unknown_zone", unknown, "unknown time zone %q; use an IANA name such as Asia/Shanghai", name)
	}
	return loc, nil
}

// titleZone capitalises each word of a zone name: america/new_york →
// America/New_York.
func titleZone(name string) string {
	b := []byte(strings.ToLower(name))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '/' || c == '_' || c == '-'
	}
	return string(b)
}

func isAbbreviation(s string) bool {
	if len(s) < 2 || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// looksLikeZone reports whether a trailing token is meant as a zone name.
func looksLikeZone(s string) bool {
	if strings.Contains(s, "/") && !strings.ContainsAny(s, "*,-0123456789") {
		return true
	}
	if strings.HasPrefix(s, "Etc/") {
		return true
	}
	return s == "UTC" || s == "GMT" || isAbbreviation(s)
}

var nameable sync.Map // zone name -> bool: LoadLocation(name) works

// zoneSuffix returns " <name>" when loc's name loads back to the same rules,
// else "" (a hand-built or fixed zone is then implied by the default zone).
func zoneSuffix(loc *time.Location) string {
	name := loc.String()
	if name == "UTC" {
		return " UTC"
	}
	if !strings.Contains(name, "/") && name != "GMT" {
		return ""
	}
	if v, ok := nameable.Load(name); ok {
		if v.(bool) {
			return " " + name
		}
		return ""
	}
	_, err := time.LoadLocation(name)
	nameable.Store(name, err == nil)
	if err != nil {
		return ""
	}
	return " " + name
}

// ZoneOf is the IANA zone a schedule's text names or was given (the zone
// of "daily 08:00 America/New_York", of a cron expression's zone), nil
// when the text does not parse or reads wall-clock times in no named zone
// ("every 30m", or a zone that is UTC).
func ZoneOf(text string) *time.Location {
	s, err := Parse(text, time.UTC)
	if err != nil {
		return nil
	}
	z, ok := s.(interface{ Zone() *time.Location })
	if !ok || z.Zone() == nil || !strings.Contains(z.Zone().String(), "/") {
		return nil
	}
	return z.Zone()
}
