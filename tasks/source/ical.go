package source

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone rules must not depend on the host (SPEC §5)

	ics "github.com/arran4/golang-ical"

	"github.com/herald-bridge/herald/tasks/watch"
)

// parseICal reads VEVENT and VTODO components.
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
// Recurrence: RRULEs are not expanded; the master component stands for the
// series and its DTSTART is the first instance. Overridden instances
// (RECURRENCE-ID) are items of their own, identified by UID+RECURRENCE-ID.
//
// Size: components are counted on the raw bytes before parsing; more than
// maxItems is TooLarge, so a calendar of 100,000 events is refused without
// building 100,000 components in memory.
func parseICal(body []byte, base *url.URL, zone *time.Location, maxItems int) ([]watch.Item, error) {
	if n := countComponents(body); n > maxItems {
		return nil, watch.Errorf(watch.TooLarge, "calendar lists %d or more entries, more than the limit of %d", n, maxItems)
	}
	cal, err := readCalendar(body)
	if err != nil {
		// Exchange writes a broken quoted TZID that swallows the value
		// (DTSTART;TZID="W. Europe Standard Time:20200609T090000"); one
		// such line should not lose the whole calendar.
		if repaired, ok := repairQuotedValues(body); ok {
			cal, err = readCalendar(repaired)
		}
	}
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "not a readable calendar: %w", err)
	}
	var items []watch.Item
	seen := map[string]bool{}
	for _, c := range cal.Components {
		var cb *ics.ComponentBase
		todo := false
		switch v := c.(type) {
		case *ics.VEvent:
			cb = &v.ComponentBase
		case *ics.VTodo:
			cb, todo = &v.ComponentBase, true
		default:
			continue // VTIMEZONE, VJOURNAL, VFREEBUSY …
		}
		it, ok := icalItem(cb, todo, base, zone)
		if !ok || seen[it.ID] {
			continue
		}
		seen[it.ID] = true
		items = append(items, it)
	}
	return items, nil
}

func readCalendar(body []byte) (*ics.Calendar, error) {
	return ics.ParseCalendarWithOptions(bytes.NewReader(body), ics.WithUnknownPropertyHandler(ics.AcceptUnknownPropertyHandler))
}

// swallowed matches a content line whose last parameter value is quoted
// and holds the property value: NAME;…;PARAM="text:VALUE".
var swallowed = regexp.MustCompile(`^([A-Za-z0-9-]+(?:;[^:"]*)*;[A-Za-z0-9-]+=)"([^"]*):([^":]*)"$`)

// repairQuotedValues unfolds the calendar and closes quotes that swallow
// a property's value. ok is false when nothing needed repair.
func repairQuotedValues(body []byte) (out []byte, ok bool) {
	unfolded := strings.NewReplacer("\r\n ", "", "\r\n\t", "", "\n ", "", "\n\t", "").Replace(string(body))
	lines := strings.Split(unfolded, "\n")
	for i, l := range lines {
		trimmed := strings.TrimRight(l, "\r")
		if m := swallowed.FindStringSubmatch(trimmed); m != nil {
			lines[i] = m[1] + `"` + m[2] + `":` + m[3]
			ok = true
		}
	}
	return []byte(strings.Join(lines, "\n")), ok
}

func countComponents(body []byte) int {
	n := 0
	for _, tag := range [][]byte{[]byte("BEGIN:VEVENT"), []byte("BEGIN:VTODO")} {
		n += bytes.Count(body, tag)
	}
	return n
}

func icalItem(cb *ics.ComponentBase, todo bool, base *url.URL, zone *time.Location) (watch.Item, bool) {
	val := func(p ics.ComponentProperty) string {
		if pr := cb.GetProperty(p); pr != nil {
			return pr.Value
		}
		return ""
	}
	summary := plainText(unescapeText(val(ics.ComponentPropertySummary)))
	link := resolve(base, val(ics.ComponentPropertyUrl))
	var due time.Time
	if todo {
		due = propTime(cb.GetProperty(ics.ComponentPropertyDue), zone)
	} else {
		due = propTime(cb.GetProperty(ics.ComponentPropertyDtStart), zone)
	}
	uid := strings.TrimSpace(val(ics.ComponentPropertyUniqueId))
	if uid == "" {
		if summary == "" {
			return watch.Item{}, false
		}
		uid = "sha256:" + digest(summary, fmtTime(due))[:32]
	}
	id := uid
	if rid := cb.GetProperty(ics.ComponentPropertyRecurrenceId); rid != nil {
		if t := propTime(rid, zone); !t.IsZero() {
			id = uid + "#" + t.UTC().Format("20060102T150405Z")
		} else {
			id = uid + "#" + strings.TrimSpace(rid.Value)
		}
	}
	status := strings.ToUpper(strings.TrimSpace(val(ics.ComponentPropertyStatus)))
	pct, _ := strconv.Atoi(strings.TrimSpace(val(ics.ComponentPropertyPercentComplete)))
	done := status == "COMPLETED" || status == "CANCELLED" || pct >= 100 ||
		strings.TrimSpace(val(ics.ComponentPropertyCompleted)) != ""
	title := summary
	if title == "" {
		title = "(untitled)"
	}
	desc := plainText(unescapeText(val(ics.ComponentPropertyDescription)))
	loc := unescapeText(val(ics.ComponentPropertyLocation))
	return watch.Item{
		ID:     id,
		Title:  title,
		URL:    link,
		Due:    due,
		Done:   done,
		Digest: digest(summary, fmtTime(due), link, loc, desc, strconv.FormatBool(done)),
		Alt:    alt(id, link),
	}, true
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

// lookupZone maps a TZID to a location: IANA names (also inside
// "/mozilla.org/…/Area/City" prefixes), then common Windows names.
// nil means unknown: the caller treats the time as floating.
func lookupZone(tzid string) *time.Location {
	tzid = strings.Trim(strings.TrimSpace(tzid), `"`)
	if tzid == "" {
		return nil
	}
	if iana, ok := windowsZones[tzid]; ok {
		tzid = iana
	}
	if l, err := time.LoadLocation(tzid); err == nil {
		return l
	}
	if parts := strings.Split(strings.Trim(tzid, "/"), "/"); len(parts) >= 2 {
		if l, err := time.LoadLocation(strings.Join(parts[len(parts)-2:], "/")); err == nil {
			return l
		}
	}
	return nil
}

// windowsZones maps the Windows zone names Exchange and Outlook write as
// TZID to IANA zones (CLDR windowsZones, territory 001).
var windowsZones = map[string]string{
	"UTC":                             "UTC",
	"GMT Standard Time":               "Europe/London",
	"Greenwich Standard Time":         "Atlantic/Reykjavik",
	"W. Europe Standard Time":         "Europe/Berlin",
	"Central Europe Standard Time":    "Europe/Budapest",
	"Central European Standard Time":  "Europe/Warsaw",
	"Romance Standard Time":           "Europe/Paris",
	"E. Europe Standard Time":         "Europe/Chisinau",
	"FLE Standard Time":               "Europe/Kiev",
	"GTB Standard Time":               "Europe/Bucharest",
	"Russian Standard Time":           "Europe/Moscow",
	"Turkey Standard Time":            "Europe/Istanbul",
	"Israel Standard Time":            "Asia/Jerusalem",
	"Jordan Standard Time":            "Asia/Amman",
	"Arabian Standard Time":           "Asia/Dubai",
	"India Standard Time":             "Asia/Kolkata",
	"China Standard Time":             "Asia/Shanghai",
	"Taipei Standard Time":            "Asia/Taipei",
	"Singapore Standard Time":         "Asia/Singapore",
	"Tokyo Standard Time":             "Asia/Tokyo",
	"Korea Standard Time":             "Asia/Seoul",
	"AUS Eastern Standard Time":       "Australia/Sydney",
	"New Zealand Standard Time":       "Pacific/Auckland",
	"Eastern Standard Time":           "America/New_York",
	"Central Standard Time":           "America/Chicago",
	"Mountain Standard Time":          "America/Denver",
	"US Mountain Standard Time":       "America/Phoenix",
	"Pacific Standard Time":           "America/Los_Angeles",
	"Alaskan Standard Time":           "America/Anchorage",
	"Hawaiian Standard Time":          "Pacific/Honolulu",
	"Atlantic Standard Time":          "America/Halifax",
	"SA Pacific Standard Time":        "America/Bogota",
	"E. South America Standard Time":  "America/Sao_Paulo",
	"South Africa Standard Time":      "Africa/Johannesburg",
	"Egypt Standard Time":             "Africa/Cairo",
	"W. Central Africa Standard Time": "Africa/Lagos",
}
