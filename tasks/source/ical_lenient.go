package source

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"

	"github.com/herald-bridge/herald/tasks/watch"
)

// unfold joins folded content lines (RFC 5545 §3.1; LF-only files too).
var unfold = regexp.MustCompile(`\r?\n[ \t]`)

// bareValue matches a property written NAME="value" or NAME=value: a
// quoted value where the colon should be (seen as ORGANIZER="mailto:…").
var bareValue = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*)="?([^"]*)"?$`)

// cleanCalendar makes a calendar readable line by line, so that one bad
// line does not lose the calendar. Content lines are unfolded and control
// characters (NUL padding in parameters) removed; a line the property
// parser cannot read is repaired when its intent is plain (a quote that
// swallowed the value, NAME="value" for NAME:value) and otherwise
// dropped, and an END without its BEGIN is dropped. skipped counts the
// lines dropped. A calendar that ends inside a component is truncated and
// refused: reading it would lose the entries after the cut. A missing
// END:VCALENDAR after a last component that closed is forgiven.
func cleanCalendar(body string) (out string, skipped int, err error) {
	body = unfold.ReplaceAllString(body, "")
	lines := strings.Split(body, "\n")
	var b strings.Builder
	b.Grow(len(body))
	var stack []string
	began := false
	calendars, closed := 0, 0
	for _, raw := range lines {
		line := strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, raw)
		if strings.TrimSpace(line) == "" {
			continue
		}
		upper := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(upper, "BEGIN:"):
			name := strings.TrimSpace(upper[len("BEGIN:"):])
			if len(stack) == 0 {
				if name != "VCALENDAR" {
					skipped++ // content outside any calendar
					continue
				}
				// Several calendars in one document are read as one.
				calendars++
				stack = append(stack, name)
				if began {
					continue
				}
				began = true
				line = "BEGIN:VCALENDAR"
				break
			}
			stack = append(stack, name)
			line = "BEGIN:" + name // names are case-insensitive (RFC 5545 §2)
		case strings.HasPrefix(upper, "END:"):
			name := strings.TrimSpace(upper[len("END:"):])
			at := -1
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i] == name {
					at = i
					break
				}
			}
			if at < 0 {
				skipped++
				continue
			}
			// Components left open inside are closed here.
			for i := len(stack) - 1; i > at; i-- {
				b.WriteString("END:" + stack[i] + "\r\n")
				skipped++
			}
			stack = stack[:at]
			closed++
			if len(stack) == 0 {
				continue // the calendar is closed once, at the end
			}
			line = "END:" + name
		default:
			if len(stack) == 0 {
				skipped++
				continue
			}
			if calendars > 1 && len(stack) == 1 {
				continue // the properties of a second calendar
			}
			fixed, ok := readableLine(upperNames(line))
			if !ok {
				skipped++
				continue
			}
			line = fixed
		}
		b.WriteString(line)
		b.WriteString("\r\n")
	}
	switch {
	case !began:
		return "", skipped, watch.Errorf(watch.Schema, "not a readable calendar: no BEGIN:VCALENDAR")
	case len(stack) > 1 || len(stack) == 1 && closed == 0:
		return "", skipped, watch.Errorf(watch.Schema, "not a readable calendar: the document ends inside %s (truncated?)", stack[len(stack)-1])
	}
	b.WriteString("END:VCALENDAR\r\n")
	return b.String(), skipped, nil
}

// upperNames writes a content line's property and parameter names in
// upper case, as the property parser and the lookups expect them: RFC 5545
// makes them case-insensitive, and lower-case ones ("uid:", "summary:",
// "dtstart;tzid=…") are found in the wild. Values, quoted parameter values
// included, are left as written.
func upperNames(line string) string {
	end := strings.IndexAny(line, ";:")
	if end < 0 {
		return line
	}
	if end == len(line) || line[end] == ':' {
		if !hasLower(line[:end]) {
			return line
		}
		return strings.ToUpper(line[:end]) + line[end:]
	}
	var b strings.Builder
	b.Grow(len(line))
	b.WriteString(strings.ToUpper(line[:end]))
	i := end
	for i < len(line) && line[i] == ';' {
		b.WriteByte(';')
		i++
		j := strings.IndexAny(line[i:], "=;:")
		if j < 0 {
			break
		}
		b.WriteString(strings.ToUpper(line[i : i+j]))
		i += j
		if line[i] != '=' {
			continue
		}
		b.WriteByte('=')
		i++
		for i < len(line) && line[i] != ';' && line[i] != ':' {
			if line[i] == '"' {
				k := strings.IndexByte(line[i+1:], '"')
				if k < 0 {
					break
				}
				b.WriteString(line[i : i+k+2])
				i += k + 2
				continue
			}
			b.WriteByte(line[i])
			i++
		}
	}
	b.WriteString(line[i:])
	return b.String()
}

func hasLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			return true
		}
	}
	return false
}

// readableLine returns line, or a repair of it, when the property parser
// reads it.
func readableLine(line string) (string, bool) {
	if p, err := ics.ParseProperty(ics.ContentLine(line)); err == nil && p != nil {
		return line, true
	}
	if m := swallowed.FindStringSubmatch(line); m != nil {
		fixed := m[1] + `"` + m[2] + `":` + m[3]
		if p, err := ics.ParseProperty(ics.ContentLine(fixed)); err == nil && p != nil {
			return fixed, true
		}
	}
	if m := bareValue.FindStringSubmatch(line); m != nil && m[2] != "" {
		fixed := m[1] + ":" + m[2]
		if p, err := ics.ParseProperty(ics.ContentLine(fixed)); err == nil && p != nil {
			return fixed, true
		}
	}
	return "", false
}

// latestVersions keeps one version of each entry: components sharing a
// UID (and RECURRENCE-ID, and kind) are versions of one entry, and the
// one with the highest SEQUENCE is it, then the latest DTSTAMP, then the
// latest LAST-MODIFIED; on a full tie the first in the document. Order is
// otherwise kept. Components without a UID are left alone.
func latestVersions[E any](entries []E, of func(E) (*ics.ComponentBase, bool), zone *time.Location) []E {
	type key struct {
		uid, rid string
		todo     bool
	}
	best := map[key]int{}
	keyOf := func(e E) (key, bool) {
		cb, todo := of(e)
		uid := strings.TrimSpace(propValue(cb, ics.ComponentPropertyUniqueId))
		if uid == "" {
			return key{}, false
		}
		k := key{uid: uid, todo: todo}
		if rid := cb.GetProperty(ics.ComponentPropertyRecurrenceId); rid != nil {
			if t := propTime(rid, zone); !t.IsZero() {
				k.rid = t.UTC().Format(time.RFC3339)
			} else {
				k.rid = strings.TrimSpace(rid.Value)
			}
		}
		return k, true
	}
	newer := func(a, b *ics.ComponentBase) bool { // a is a later version than b
		sa, _ := strconv.Atoi(strings.TrimSpace(propValue(a, ics.ComponentPropertySequence)))
		sb, _ := strconv.Atoi(strings.TrimSpace(propValue(b, ics.ComponentPropertySequence)))
		if sa != sb {
			return sa > sb
		}
		for _, p := range []ics.ComponentProperty{ics.ComponentPropertyDtstamp, ics.ComponentPropertyLastModified} {
			ta, tb := propTime(a.GetProperty(p), time.UTC), propTime(b.GetProperty(p), time.UTC)
			if !ta.Equal(tb) {
				return ta.After(tb)
			}
		}
		return false
	}
	dup := false
	for i, e := range entries {
		k, ok := keyOf(e)
		if !ok {
			continue
		}
		j, seen := best[k]
		if !seen {
			best[k] = i
			continue
		}
		dup = true
		a, _ := of(e)
		b, _ := of(entries[j])
		if newer(a, b) {
			best[k] = i
		}
	}
	if !dup {
		return entries
	}
	out := entries[:0:0]
	for i, e := range entries {
		if k, ok := keyOf(e); ok && best[k] != i {
			continue
		}
		out = append(out, e)
	}
	return out
}
