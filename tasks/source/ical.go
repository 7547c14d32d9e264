package source

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone rules must not depend on the host (docs/configuration.md, Configuration: schedules)

	ics "github.com/arran4/golang-ical"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseICal reads VEVENT and VTODO components; now places the window of
// listed occurrences of recurring ones.
//
// Due: a VTODO's DUE (a todo without DUE has no deadline). A VEVENT's
// DTSTART: LMS exports (Canvas, Moodle) publish an assignment deadline as
// a zero-length event starting at the due time, and for a real event the
// start is the moment to be reminded of. DATE values mean midnight at the
// start of that day in the default zone.
//
// Zones: TZID names are looked up as IANA names, then as Windows names
// (Exchange/Outlook exports); an unknown TZID is treated as floating.
// Floating times are read in zone.
//
// Recurrence: a component with an RRULE is a series and each of its
// occurrences is an item of its own, identified by the UID and the
// occurrence's original start (UID#20261208T210000Z, the form a
// RECURRENCE-ID names it by), so the identity is stable across fetches
// and an override replaces exactly its occurrence. The rule (DAILY,
// WEEKLY, MONTHLY, YEARLY; RDATE adds instances, EXDATE removes them) is
// evaluated in DTSTART's zone: a weekly 09:00 Europe/Berlin event stays
// at 09:00 local across DST, and an all-day series stays on dates. A
// todo's DUE keeps its distance from DTSTART in each occurrence.
// Title, link, description and status come from the master unless a
// RECURRENCE-ID component overrides them (and its time); an overridden
// instance with STATUS:CANCELLED is removed.
//
// Only occurrences due within a window around now are listed: from
// recurLookback before now (a week, so a deadline that just passed is
// not reported removed at once) to recurHorizon after (180 days), at most
// maxOccurrences per series; an infinite rule is therefore fine. A series
// with no occurrence in the window lists nothing. A malformed or
// unsupported rule (HOURLY and finer, BYEASTER) does not lose the
// calendar: its master stands for the series as one item at DTSTART, and
// its overrides are items of their own. Components without an RRULE are
// listed whatever their date.
//
// Size: components are counted on the raw bytes before parsing; more than
// maxItems is TooLarge, so a calendar of 100,000 events is refused without
// building 100,000 components in memory. The cap applies again to the
// items after expansion, and expanding rules has a work budget
// (recurBudget); past either the calendar is TooLarge.
func parseICal(body []byte, contentType string, base *url.URL, zone *time.Location, maxItems int, now time.Time) (items []watch.Item, skipped int, err error) {
	if n := countComponents(body, maxItems); n > maxItems {
		return nil, 0, watch.Errorf(watch.TooLarge, "calendar lists %d or more entries, more than the limit of %d", n, maxItems)
	}
	text, skipped, err := cleanCalendar(string(toUTF8(body, contentType, false)))
	if err != nil {
		return nil, 0, err
	}
	cal, err := readCalendar([]byte(text))
	if err != nil {
		return nil, 0, watch.Errorf(watch.Schema, "not a readable calendar: %w", err)
	}
	type entry struct {
		cb   *ics.ComponentBase
		todo bool
	}
	var entries []entry
	for _, c := range cal.Components {
		switch v := c.(type) {
		case *ics.VEvent:
			entries = append(entries, entry{&v.ComponentBase, false})
		case *ics.VTodo:
			entries = append(entries, entry{&v.ComponentBase, true})
		}
		// VTIMEZONE, VJOURNAL, VFREEBUSY … are not items.
	}
	entries = latestVersions(entries, func(e entry) (*ics.ComponentBase, bool) { return e.cb, e.todo }, zone)

	// Find the series first: an override may come before its master.
	seriesOf := map[*ics.ComponentBase]*series{}
	expanded := map[string]bool{} // UIDs whose overrides belong to a series
	overrides := map[string][]*ics.ComponentBase{}
	for _, e := range entries {
		uid := strings.TrimSpace(propValue(e.cb, ics.ComponentPropertyUniqueId))
		if e.cb.GetProperty(ics.ComponentPropertyRecurrenceId) != nil {
			if uid != "" {
				overrides[uid] = append(overrides[uid], e.cb)
			}
			continue
		}
		if uid != "" && expanded[uid] {
			continue // a second master with the same UID stands for itself
		}
		id, ok := componentUID(e.cb, e.todo, zone)
		if !ok {
			continue
		}
		if s, ok := newSeries(e.cb, e.todo, id, zone); ok && s.ruleErr == nil {
			seriesOf[e.cb] = s
			if uid != "" {
				expanded[uid] = true
			}
		}
	}

	seen := map[string]bool{}
	budget := recurBudget
	from, to := now.Add(-recurLookback), now.Add(recurHorizon)
	for _, e := range entries {
		var its []watch.Item
		switch s := seriesOf[e.cb]; {
		case s != nil:
			its, err = s.items(overrides[s.uid], base, from, to, &budget)
			if err != nil {
				return nil, 0, err
			}
		case e.cb.GetProperty(ics.ComponentPropertyRecurrenceId) != nil &&
			expanded[strings.TrimSpace(propValue(e.cb, ics.ComponentPropertyUniqueId))]:
			continue // listed with its series
		default:
			it, ok := icalItem(e.cb, e.todo, base, zone)
			if !ok {
				continue
			}
			its = []watch.Item{it}
		}
		for _, it := range its {
			if seen[it.ID] {
				continue
			}
			seen[it.ID] = true
			items = append(items, it)
		}
		if len(items) > maxItems {
			return nil, 0, watch.Errorf(watch.TooLarge, "calendar lists %d or more entries with its recurrences, more than the limit of %d", len(items), maxItems)
		}
	}
	return items, skipped, nil
}

func readCalendar(body []byte) (*ics.Calendar, error) {
	return ics.ParseCalendarWithOptions(bytes.NewReader(body), ics.WithUnknownPropertyHandler(ics.AcceptUnknownPropertyHandler))
}

// swallowed matches a content line whose last parameter value is quoted
// and holds the property value: NAME;…;PARAM="text:VALUE".
var swallowed = regexp.MustCompile(`^([A-Za-z0-9-]+(?:;[^:"]*)*;[A-Za-z0-9-]+=)"([^"]*):([^":]*)"$`)

// countComponents counts the events and todos a calendar begins
// (BEGIN:VEVENT, BEGIN:VTODO in any case: RFC 5545 names are
// case-insensitive), stopping past limit.
func countComponents(body []byte, limit int) int {
	n := 0
	for i := 0; n <= limit; {
		k := bytes.IndexByte(body[i:], ':')
		if k < 0 {
			break
		}
		at := i + k
		i = at + 1
		if at < 5 || !bytes.EqualFold(body[at-5:at], []byte("BEGIN")) {
			continue
		}
		rest := body[at+1:]
		if len(rest) >= 6 && bytes.EqualFold(rest[:6], []byte("VEVENT")) ||
			len(rest) >= 5 && bytes.EqualFold(rest[:5], []byte("VTODO")) {
			n++
		}
	}
	return n
}

func propValue(cb *ics.ComponentBase, p ics.ComponentProperty) string {
	if pr := cb.GetProperty(p); pr != nil {
		return pr.Value
	}
	return ""
}

// componentDue is a component's own due time: a todo's DUE, an event's
// DTSTART.
func componentDue(cb *ics.ComponentBase, todo bool, zone *time.Location) time.Time {
	if todo {
		return propTime(cb.GetProperty(ics.ComponentPropertyDue), zone)
	}
	return propTime(cb.GetProperty(ics.ComponentPropertyDtStart), zone)
}

// componentUID returns the UID, or for a component without one a digest
// of its title and due time; ok is false when it has neither UID nor title.
func componentUID(cb *ics.ComponentBase, todo bool, zone *time.Location) (string, bool) {
	if uid := strings.TrimSpace(propValue(cb, ics.ComponentPropertyUniqueId)); uid != "" {
		return uid, true
	}
	summary := normSpace(unescapeText(propValue(cb, ics.ComponentPropertySummary)))
	if summary == "" {
		return "", false
	}
	return "sha256:" + digest(summary, fmtTime(componentDue(cb, todo, zone)))[:32], true
}

// icalItem is the item of a component that is not expanded: a single
// entry, a series whose rule could not be read, or an override whose
// series is not expanded (identified by UID+RECURRENCE-ID).
func icalItem(cb *ics.ComponentBase, todo bool, base *url.URL, zone *time.Location) (watch.Item, bool) {
	uid, ok := componentUID(cb, todo, zone)
	if !ok {
		return watch.Item{}, false
	}
	id := uid
	if rid := cb.GetProperty(ics.ComponentPropertyRecurrenceId); rid != nil {
		if t := propTime(rid, zone); !t.IsZero() {
			id = uid + "#" + t.UTC().Format("20060102T150405Z")
		} else {
			id = uid + "#" + strings.TrimSpace(rid.Value)
		}
	}
	it := buildItem(props{own: cb}, id, componentDue(cb, todo, zone), base)
	it.Alt = alt(id, it.URL)
	return it, true
}

// props reads a component's properties; an overridden instance falls back
// to its series' master for what it leaves out.
type props struct{ own, master *ics.ComponentBase }

func (p props) value(name ics.ComponentProperty) string {
	if pr := p.own.GetProperty(name); pr != nil {
		return pr.Value
	}
	if p.master != nil {
		return propValue(p.master, name)
	}
	return ""
}

// buildItem makes the item with identity id and due time due from p's
// text and status. Alt is left to the caller.
func buildItem(p props, id string, due time.Time, base *url.URL) watch.Item {
	summary := normSpace(unescapeText(p.value(ics.ComponentPropertySummary))) // TEXT, never HTML
	link := resolve(base, p.value(ics.ComponentPropertyUrl))
	status := strings.ToUpper(strings.TrimSpace(p.value(ics.ComponentPropertyStatus)))
	pct, _ := strconv.Atoi(strings.TrimSpace(p.value(ics.ComponentPropertyPercentComplete)))
	done := status == "COMPLETED" || status == "CANCELLED" || pct >= 100 ||
		strings.TrimSpace(p.value(ics.ComponentPropertyCompleted)) != ""
	title := summary
	if title == "" {
		title = "(untitled)"
	}
	desc := plainText(unescapeText(p.value(ics.ComponentPropertyDescription)))
	loc := unescapeText(p.value(ics.ComponentPropertyLocation))
	return watch.Item{
		ID:      id,
		Title:   title,
		URL:     link,
		Due:     due,
		Done:    done,
		Digest:  digest(summary, fmtTime(due), link, loc, desc, strconv.FormatBool(done)),
		Summary: watch.Summary(desc, title),
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// unescapeText undoes RFC 5545 TEXT escapes.
func unescapeText(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n', 'N':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// propTime reads a DATE or DATE-TIME property; zero when absent or unreadable.
func propTime(p *ics.IANAProperty, zone *time.Location) time.Time {
	if p == nil {
		return time.Time{}
	}
	var tzid string
	if v := p.ICalParameters[string(ics.ParameterTzid)]; len(v) > 0 {
		tzid = v[0]
	}
	t, err := parseICalTime(strings.TrimSpace(p.Value), tzid, zone)
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseICalTime parses the value forms found in real exports: UTC
// (…Z), zoned (TZID), floating, DATE, and the malformed "20210527Z".
func parseICalTime(v, tzid string, zone *time.Location) (time.Time, error) {
	loc := zone
	if tzid != "" {
		if l := lookupZone(tzid); l != nil {
			loc = l
		}
	}
	switch {
	case len(v) == 16 && v[15] == 'Z':
		return time.Parse("20060102T150405Z", v)
	case len(v) == 15:
		return time.ParseInLocation("20060102T150405", v, loc)
	case len(v) == 13 && v[12] == 'Z': // no seconds
		return time.Parse("20060102T1504Z", v)
	case len(v) == 8:
		return time.ParseInLocation("20060102", v, zone)
	case len(v) == 9 && v[8] == 'Z':
		return time.ParseInLocation("20060102", v[:8], zone)
	}
	return time.Time{}, fmt.Errorf("unreadable date-time")
}
