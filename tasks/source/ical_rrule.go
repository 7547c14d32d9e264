package source

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Bounds of recurrence expansion.
const (
	// recurLookback keeps an occurrence listed for a week after its due
	// time. Reminders never fire after the due time, so nothing is lost by
	// dropping it later, but dropping it at once would make every check
	// just after a deadline see the item vanish; a week also keeps a
	// just-past instance that the organiser edits visible as changed.
	recurLookback = 7 * 24 * time.Hour
	// recurHorizon is how far ahead occurrences are listed: a semester,
	// well beyond any remind-before offset.
	recurHorizon = 180 * 24 * time.Hour
	// maxOccurrences caps the listed occurrences of one series; the rest
	// are listed as the window moves on.
	maxOccurrences = 500
	// recurBudget caps the work of expanding one calendar, in units of
	// about one DAILY step of the rule engine (see steps; an occurrence
	// generated costs outputCost). It is about half a second of CPU: a
	// daily series started in 2000 costs 1% of it, while a document built
	// to make the engine walk for a long time is refused as TooLarge.
	recurBudget = 16_000_000
	// outputCost is the cost of one generated occurrence, in steps.
	outputCost = 16
	// maxRuleLen refuses to expand absurdly long rules: no real rule comes
	// close, and long BY lists make every step of the engine slower.
	maxRuleLen = 512
)

// errRecurBudget reports a calendar whose recurrences need more work to
// expand than recurBudget.
var errRecurBudget = watch.Errorf(watch.TooLarge, "calendar's recurring entries need more work to expand than the limit")

// cycleYears is the Gregorian cycle: dates, weekdays and leap years repeat
// exactly every 400 years, so shifting a rule by a multiple of it (and of
// its INTERVAL) changes no occurrence's wall-clock date or time.
const cycleYears = 400

// periodsPerCycle is the number of FREQ periods in one Gregorian cycle.
var periodsPerCycle = map[rrule.Frequency]int{
	rrule.YEARLY:  400,
	rrule.MONTHLY: 400 * 12,
	rrule.WEEKLY:  146097 / 7,
	rrule.DAILY:   146097,
}

// stepWeight approximates the cost of one engine step per frequency,
// relative to a DAILY step: a YEARLY step builds a whole year's masks.
var stepWeight = map[rrule.Frequency]int{
	rrule.YEARLY:  20,
	rrule.MONTHLY: 3,
	rrule.WEEKLY:  2,
	rrule.DAILY:   1,
}

// series is a recurring master component ready to expand.
type series struct {
	master *ics.ComponentBase
	todo   bool
	uid    string
	loc    *time.Location // the zone the rule is evaluated in
	allDay bool           // DTSTART is a DATE: occurrences stay dates
	start  time.Time      // DTSTART (a todo without one: DUE)

	// A todo's DUE relative to its start, in calendar days and clock
	// seconds so it keeps its local time across DST; hasDue is false for a
	// todo without DUE. An event is due at its start.
	hasDue   bool
	dueDays  int
	dueSecs  int
	dueDelta time.Duration // the same as a duration, for window bounds

	opt   rrule.ROption // without DTSTART and UNTIL
	until time.Time     // zero: none

	exAt    map[int64]bool // excluded instants
	exDay   map[civil]bool // excluded dates (DATE values, all-day series)
	rdates  []time.Time
	zone    *time.Location // the default zone (DATE values)
	ruleErr error          // why the series cannot be expanded
}

// civil is a calendar date.
type civil struct {
	y int
	m time.Month
	d int
}

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil{y, m, d}
}

// newSeries reads cb's recurrence. ok is false when cb has no RRULE; a
// non-nil s.ruleErr means the rule is malformed or unsupported and the
// master stands for itself.
func newSeries(cb *ics.ComponentBase, todo bool, uid string, zone *time.Location) (s *series, ok bool) {
	rp := cb.GetProperty(ics.ComponentPropertyRrule)
	if rp == nil {
		return nil, false
	}
	s = &series{master: cb, todo: todo, uid: uid, zone: zone}
	s.ruleErr = s.read(cb, strings.TrimSpace(rp.Value))
	return s, true
}

func (s *series) read(cb *ics.ComponentBase, rule string) error {
	startProp := cb.GetProperty(ics.ComponentPropertyDtStart)
	dueProp := cb.GetProperty(ics.ComponentPropertyDue)
	if !s.todo {
		dueProp = nil
	}
	if startProp == nil {
		startProp = dueProp
	}
	s.start = propTime(startProp, s.zone)
	if s.start.IsZero() {
		return errors.New("recurrence without a readable start")
	}
	if y := s.start.Year(); y < 1 || y > 9000 {
		return fmt.Errorf("recurrence start year %d out of range", y)
	}
	s.loc = s.start.Location()
	s.allDay = isDateValue(startProp)
	s.hasDue = !s.todo
	if due := propTime(dueProp, s.zone); s.todo && !due.IsZero() {
		d := due.In(s.loc)
		s.hasDue = true
		s.dueDays = daysBetween(civilOf(s.start), civilOf(d))
		s.dueSecs = clockSecs(d) - clockSecs(s.start)
		s.dueDelta = d.Sub(s.start)
	}

	opt, untilRaw, err := parseRule(rule)
	if err != nil {
		return err
	}
	s.opt = opt
	if untilRaw != "" {
		u, err := parseICalTime(untilRaw, "", s.loc)
		if err != nil {
			return fmt.Errorf("UNTIL: %w", err)
		}
		if isDateString(untilRaw) && !s.allDay {
			u = u.AddDate(0, 0, 1).Add(-time.Second) // the whole day
		}
		s.until = u
	}
	// Let the engine check the BY parts against their bounds now, so a
	// bad rule is found before anything is listed.
	check := s.opt
	check.Dtstart = s.start
	if _, err := rrule.NewRRule(check); err != nil {
		return err
	}

	s.exAt, s.exDay = map[int64]bool{}, map[civil]bool{}
	for _, p := range cb.GetProperties(ics.ComponentPropertyExdate) {
		for _, v := range propValues(p) {
			t, date, ok := s.parseDate(p, v)
			switch {
			case !ok:
			case date || s.allDay:
				s.exDay[civilOf(t)] = true
			default:
				s.exAt[t.Unix()] = true
			}
		}
	}
	for _, p := range cb.GetProperties(ics.ComponentPropertyRdate) {
		for _, v := range propValues(p) {
			if t, ok := s.occurrenceAt(p, v); ok {
				s.rdates = append(s.rdates, t)
			}
		}
	}
	return nil
}

// parseRule reads an RRULE value. UNTIL is returned raw: it is read in
// the series' zone, not the engine's. X- parts are ignored.
func parseRule(v string) (opt rrule.ROption, until string, err error) {
	if len(v) > maxRuleLen {
		return opt, "", fmt.Errorf("rule longer than %d bytes", maxRuleLen)
	}
	var keep []string
	for _, part := range strings.Split(strings.ToUpper(v), ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			return opt, "", fmt.Errorf("rule part %q has no value", k)
		case k == "UNTIL":
			until = val
		case strings.HasPrefix(k, "X-"):
		case k == "COUNT":
			if n, err := strconv.Atoi(val); err != nil || n < 1 {
				return opt, "", errors.New("COUNT must be a positive number")
			}
			keep = append(keep, part)
		default:
			keep = append(keep, part)
		}
	}
	o, err := rrule.StrToROption(strings.Join(keep, ";"))
	if err != nil {
		return opt, "", err
	}
	if _, ok := periodsPerCycle[o.Freq]; !ok {
		// Deadline calendars do not repeat by the hour or minute, and
		// walking such a rule from an old start is unbounded work.
		return opt, "", fmt.Errorf("FREQ=%s is not expanded", o.Freq)
	}
	if len(o.Byeaster) > 0 {
		return opt, "", errors.New("BYEASTER is not expanded")
	}
	return *o, until, nil
}

// propValues splits a comma-separated date list (EXDATE, RDATE).
func propValues(p *ics.IANAProperty) []string {
	var out []string
	for _, v := range strings.Split(p.Value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseDate reads one value of a date list property; date reports a DATE
// value. A PERIOD is read as its start.
func (s *series) parseDate(p *ics.IANAProperty, v string) (t time.Time, date, ok bool) {
	v, _, _ = strings.Cut(v, "/")
	var tzid string
	if tz := p.ICalParameters[string(ics.ParameterTzid)]; len(tz) > 0 {
		tzid = tz[0]
	}
	t, err := parseICalTime(v, tzid, s.zone)
	if err != nil {
		return time.Time{}, false, false
	}
	return t, isDateString(v), true
}

// occurrenceAt reads a value naming an occurrence (RDATE, RECURRENCE-ID)
// and returns that occurrence's start as the series would generate it: an
// all-day series' occurrence is midnight of the named date in the default
// zone; a DATE naming an occurrence of a timed series takes DTSTART's time
// of day.
func (s *series) occurrenceAt(p *ics.IANAProperty, v string) (time.Time, bool) {
	t, date, ok := s.parseDate(p, v)
	if !ok {
		return time.Time{}, false
	}
	switch {
	case s.allDay:
		c := civilOf(t)
		return time.Date(c.y, c.m, c.d, 0, 0, 0, 0, s.zone), true
	case date:
		c, st := civilOf(t), s.start
		return time.Date(c.y, c.m, c.d, st.Hour(), st.Minute(), st.Second(), 0, s.loc), true
	}
	return t, true
}

// dueOf returns the due time of the occurrence starting at t (zero for a
// todo without DUE).
func (s *series) dueOf(t time.Time) time.Time {
	if !s.hasDue {
		return time.Time{}
	}
	if s.dueDays == 0 && s.dueSecs == 0 {
		return t
	}
	t = t.In(s.loc)
	return time.Date(t.Year(), t.Month(), t.Day()+s.dueDays, t.Hour(), t.Minute(), t.Second()+s.dueSecs, 0, s.loc)
}

// windowTime is what places an occurrence in the window: its due time,
// or its start when it has none.
func (s *series) windowTime(t time.Time) time.Time {
	if d := s.dueOf(t); !d.IsZero() {
		return d
	}
	return t
}

func (s *series) excluded(t time.Time) bool {
	return s.exAt[t.Unix()] || s.exDay[civilOf(t.In(s.loc))]
}

// expand returns the starts of the occurrences whose windowTime lies in
// [from, to], in order, at most maxOccurrences. budget is the calendar's
// remaining work; running out of it is TooLarge.
//
// The engine walks a rule from DTSTART and, for a rule that matches no
// date (BYMONTH=2;BYMONTHDAY=30), on to the year 9999 before it gives up.
// The walk is therefore done in a frame shifted forward by whole Gregorian
// cycles (which leaves every wall-clock date and time, INTERVAL alignment
// and COUNT unchanged), placing the window as late as the engine allows,
// so that walk past the window is at most about one cycle. Wall-clock
// times are taken back to the series' zone one by one, which keeps a
// weekly 09:00 at 09:00 local across DST.
func (s *series) expand(from, to time.Time, budget *int) ([]time.Time, error) {
	// Occurrences may start up to dueDelta before their window time.
	last := to.Add(-s.dueDelta).Add(3 * time.Hour) // DST slack of dueOf
	var out []time.Time
	seen := map[int64]bool{}
	consider := func(t time.Time) {
		if seen[t.Unix()] || s.excluded(t) {
			return
		}
		seen[t.Unix()] = true
		if w := s.windowTime(t); !w.Before(from) && !w.After(to) {
			out = append(out, t)
		}
	}

	if !s.start.After(last) {
		shift := s.frameShift(last)
		toFrame := func(t time.Time) time.Time {
			t = t.In(s.loc)
			return time.Date(t.Year()+shift, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
		}
		fromFrame := func(f time.Time) time.Time {
			return time.Date(f.Year()-shift, f.Month(), f.Day(), f.Hour(), f.Minute(), f.Second(), 0, s.loc)
		}
		opt := s.opt
		opt.Dtstart = toFrame(s.start)
		// An explicit end: left unset, the engine stops 292 years after
		// DTSTART. UNTIL itself is applied in real time by consider.
		frameEnd := time.Date(rrule.MAXYEAR, 12, 31, 23, 59, 59, 0, time.UTC)
		opt.Until = frameEnd
		r, err := rrule.NewRRule(opt)
		if err != nil {
			return nil, err // checked in read; kept for safety
		}
		next, prev, n := r.Iterator(), opt.Dtstart, 0
		for len(out) < maxOccurrences {
			f, ok := next()
			if !ok {
				if opt.Count == 0 || n < opt.Count {
					*budget -= s.steps(prev, frameEnd) // walked to the engine's end
				}
				break
			}
			n++
			*budget -= outputCost + s.steps(prev, f)
			prev = f
			if *budget < 0 {
				return nil, errRecurBudget
			}
			t := fromFrame(f)
			if t.After(last) || (!s.until.IsZero() && t.After(s.until)) {
				break
			}
			consider(t)
		}
		if *budget < 0 {
			return nil, errRecurBudget
		}
		// RFC 5545: DTSTART is always the first instance, matched or not.
		consider(s.start)
	}
	// RDATEs add to the set whatever the rule's end says.
	for _, t := range s.rdates {
		consider(t)
	}
	sortTimes(out)
	if len(out) > maxOccurrences {
		out = out[:maxOccurrences]
	}
	return out, nil
}

// frameShift returns the years to shift the rule by so that last falls
// as late as the engine's range allows: a multiple of the Gregorian cycle
// that keeps INTERVAL aligned (0 when no such multiple fits).
func (s *series) frameShift(last time.Time) int {
	n := max(s.opt.Interval, 1)
	c := periodsPerCycle[s.opt.Freq]
	k := n / gcd(n, c) // cycles until the rule's steps line up again
	if k > 24 {
		return 0
	}
	step := cycleYears * k
	room := rrule.MAXYEAR - 1 - last.Year()
	if room < step {
		return 0
	}
	return room / step * step
}

// steps estimates the engine's work walking from a to b (frame times).
func (s *series) steps(a, b time.Time) int {
	n := max(s.opt.Interval, 1)
	var periods int
	switch s.opt.Freq {
	case rrule.YEARLY:
		periods = b.Year() - a.Year()
	case rrule.MONTHLY:
		periods = (b.Year()-a.Year())*12 + int(b.Month()-a.Month())
	case rrule.WEEKLY:
		periods = int((b.Unix()-a.Unix())/86400) / 7
	default:
		periods = int((b.Unix() - a.Unix()) / 86400)
	}
	return max(periods/n, 0) * stepWeight[s.opt.Freq]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func sortTimes(ts []time.Time) {
	// Insertion sort: the engine's output is already in order; only
	// DTSTART and RDATEs are appended out of place.
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

func daysBetween(a, b civil) int {
	ta := time.Date(a.y, a.m, a.d, 0, 0, 0, 0, time.UTC)
	tb := time.Date(b.y, b.m, b.d, 0, 0, 0, 0, time.UTC)
	return int((tb.Unix() - ta.Unix()) / 86400) // Sub saturates after 292 years
}

func clockSecs(t time.Time) int {
	h, m, s := t.Clock()
	return h*3600 + m*60 + s
}

// isDateValue reports whether p holds a DATE (not a DATE-TIME).
func isDateValue(p *ics.IANAProperty) bool {
	if p == nil {
		return false
	}
	if v := p.ICalParameters[string(ics.ParameterValue)]; len(v) > 0 && strings.EqualFold(v[0], "DATE") {
		return true
	}
	return isDateString(strings.TrimSpace(p.Value))
}

func isDateString(v string) bool {
	return len(v) == 8 || (len(v) == 9 && v[8] == 'Z')
}

// occurrenceID is an occurrence's identity: the series UID and the
// occurrence's original start, in the form RECURRENCE-ID overrides use.
func occurrenceID(uid string, start time.Time) string {
	return uid + "#" + start.UTC().Format("20060102T150405Z")
}

// items lists the series' occurrences in [from, to] with its overrides
// applied, each naming the series (Item.Series). Occurrence items carry no Alt: every occurrence shares the
// master's link, and matching by it would let a newly listed occurrence
// take over an old one's entry and read as changed instead of new.
func (s *series) items(overrides []*ics.ComponentBase, base *url.URL, from, to time.Time, budget *int) ([]watch.Item, error) {
	starts, err := s.expand(from, to, budget)
	if err != nil {
		return nil, err
	}
	type override struct {
		cb    *ics.ComponentBase
		start time.Time // the original start it replaces
		used  bool
	}
	byID := map[string]*override{}
	var order []string
	for _, cb := range overrides {
		rid := cb.GetProperty(ics.ComponentPropertyRecurrenceId)
		t, ok := s.occurrenceAt(rid, strings.TrimSpace(rid.Value))
		if !ok {
			continue
		}
		id := occurrenceID(s.uid, t)
		if byID[id] != nil {
			continue
		}
		byID[id] = &override{cb: cb, start: t}
		order = append(order, id)
	}

	var out []watch.Item
	for _, t := range starts {
		id := occurrenceID(s.uid, t)
		if o := byID[id]; o != nil {
			o.used = true
			if !cancelled(o.cb) {
				out = append(out, s.overrideItem(o.cb, id, t, base))
			}
			continue
		}
		out = append(out, buildItem(props{own: s.master}, id, s.dueOf(t), base))
	}
	// Overrides of occurrences not generated above (outside the window,
	// excluded, or not on the rule) are listed when either their original
	// or their new time is in the window.
	in := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && !t.After(to) }
	for _, id := range order {
		o := byID[id]
		if o.used || cancelled(o.cb) {
			continue
		}
		if it := s.overrideItem(o.cb, id, o.start, base); in(s.windowTime(o.start)) || in(it.Due) {
			out = append(out, it)
		}
	}
	for i := range out {
		out[i].Series = s.uid // a known series continuing is not news (watch.Compute)
	}
	return out, nil
}

// overrideItem is the item of the occurrence originally starting at start
// as a RECURRENCE-ID component overrides it: its own time if it gives
// one, else the occurrence's.
func (s *series) overrideItem(cb *ics.ComponentBase, id string, start time.Time, base *url.URL) watch.Item {
	due := componentDue(cb, s.todo, s.zone)
	if due.IsZero() {
		due = s.dueOf(start)
	}
	return buildItem(props{own: cb, master: s.master}, id, due, base)
}

func cancelled(cb *ics.ComponentBase) bool {
	return strings.EqualFold(strings.TrimSpace(propValue(cb, ics.ComponentPropertyStatus)), "CANCELLED")
}
