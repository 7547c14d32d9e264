package schedule

import "time"

// offsetWindow bounds how far from a wall time the zone transitions that
// may produce it are looked for. Real zones stay within ±26 h of UTC.
const offsetWindow = 7 * 24 * 3600

// civil returns the wall-clock fields of t as a UTC time value, truncated
// to the minute. Wall times are compared and stepped in this form.
func civil(t time.Time) time.Time {
	y, mo, d := t.Date()
	return time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, time.UTC)
}

// resolve returns the instant at which the wall time w (a civil value, see
// civil) happens in loc. A wall time that occurs twice resolves to its first
// occurrence; one that does not occur resolves to the first existing minute
// after it, searched minute by minute for at most 3 days. ok is false when
// the search finds nothing.
func resolve(w time.Time, loc *time.Location) (t time.Time, ok bool) {
	if t, ok := earliest(w, loc); ok {
		return t, true
	}
	w = w.Truncate(time.Minute)
	for i := 1; i <= maxGapMinutes; i++ {
		if t, ok := earliest(w.Add(time.Duration(i)*time.Minute), loc); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// earliest returns the first instant whose wall clock in loc reads w.
func earliest(w time.Time, loc *time.Location) (time.Time, bool) {
	wall := w.Unix()
	p := time.Unix(wall-offsetWindow, 0).In(loc)
	for {
		start, end := p.ZoneBounds()
		_, off := p.Zone()
		c := wall - int64(off)
		if (start.IsZero() || c >= start.Unix()) && (end.IsZero() || c < end.Unix()) {
			return time.Unix(c, int64(w.Nanosecond())).In(loc), true
		}
		if end.IsZero() || end.Unix() > wall+offsetWindow || !end.After(p) {
			return time.Time{}, false
		}
		p = end.In(loc)
	}
}
