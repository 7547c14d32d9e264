package schedule

import (
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Cron runs at the wall-clock minutes a 5-field cron expression selects
// (minute hour day-of-month month day-of-week), with Vixie cron's rule for
// the two day fields: when both are restricted (neither starts with "*"), a
// day matches if either does. Wall times in a DST gap run at the first
// existing minute after them; repeated wall times run at the first
// occurrence only.
type Cron struct {
	expr     string // canonical fields
	loc      *time.Location
	minute   uint64
	hour     uint64
	dom      uint64
	month    uint64
	dow      uint64
	domStar  bool
	dowStar  bool
	explicit bool // zone named in the text
}

var _ Schedule = (*Cron)(nil)

// Kind returns "cron".
func (c *Cron) Kind() string { return KindCron }

// Zone returns the zone the expression's fields are read in.
func (c *Cron) Zone() *time.Location { return c.loc }

// String returns e.g. "cron 0 9 * * MON-FRI Europe/London".
func (c *Cron) String() string {
	s := zoneSuffix(c.loc)
	if s == "" && c.explicit {
		s = " " + c.loc.String()
	}
	return "cron " + c.expr + s
}

// errCronSearch ends a search that found no matching minute; Parse refuses
// expressions that can never match, so this needs a calendar without them.
var errCronSearch = errors.New("schedule: cron expression matches no time in 10 years")

// Next returns the first run strictly after `after`.
func (c *Cron) Next(after time.Time) (time.Time, error) {
	w := civil(after.In(c.loc))
	for i := 0; i < 100000; i++ {
		m, ok := c.match(w)
		if !ok {
			return time.Time{}, errCronSearch
		}
		t, ok := resolve(m, c.loc)
		if !ok {
			return time.Time{}, noSuchTime(m, c.loc)
		}
		if t.After(after) {
			return t, nil
		}
		w = m.Add(time.Minute)
	}
	return time.Time{}, errCronSearch
}

func has(set uint64, v int) bool { return set&(1<<uint(v)) != 0 }

func (c *Cron) dayMatches(w time.Time) bool {
	d := has(c.dom, w.Day())
	wd := has(c.dow, int(w.Weekday()))
	if c.domStar || c.dowStar {
		return d && wd
	}
	return d || wd
}

// match returns the first civil minute at or after w the fields select.
func (c *Cron) match(w time.Time) (time.Time, bool) {
	end := w.AddDate(10, 0, 0)
	for w.Before(end) {
		y, mo, d := w.Date()
		switch {
		case !has(c.month, int(mo)):
			w = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(w):
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case !has(c.hour, w.Hour()):
			w = time.Date(y, mo, d, w.Hour()+1, 0, 0, 0, time.UTC)
		default:
			rest := c.minute >> uint(w.Minute())
			if rest == 0 {
				w = time.Date(y, mo, d, w.Hour()+1, 0, 0, 0, time.UTC)
				continue
			}
			return w.Add(time.Duration(bits.TrailingZeros64(rest)) * time.Minute), true
		}
	}
	return time.Time{}, false
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dowNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	macros     = map[string]string{
		"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
		"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
	}
	fieldNames = []string{"minute", "hour", "day-of-month", "month", "day-of-week"}
)

func (p *parser) cron(args []string) (Schedule, error) {
	const usage = `"cron" needs 5 fields (minute hour day-of-month month day-of-week), like "cron 0 9 * * 1-5"`
	c := &Cron{loc: p.def}
	if n := len(args); n > 0 && (n == 2 || n == 6) && looksLikeZone(args[n-1]) {
		z, err := p.zone(args[n-1])
		if err != nil {
			return nil, err
		}
		c.loc, c.explicit = z, true
		args = args[:n-1]
	}
	if len(args) == 1 {
		m, ok := macros[strings.ToLower(args[0])]
		if !ok {
			return nil, p.errf(p.pos(args[0]), usage)
		}
		c.expr = strings.ToLower(args[0])
		args = strings.Fields(m)
	} else if len(args) != 5 {
		return nil, p.errf(len([]rune(p.text)), "%s; got %d fields", usage, len(args))
	}
	limits := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	var sets [5]uint64
	canon := make([]string, 5)
	for i, f := range args {
		var names []string
		switch i {
		case 3:
			names = monthNames
		case 4:
			names = dowNames
		}
		set, text, msg := parseField(f, limits[i][0], limits[i][1], names)
		if msg != "" {
			return nil, p.errf(p.pos(f), "cron %s field %q: %s", fieldNames[i], f, msg)
		}
		sets[i], canon[i] = set, text
	}
	if sets[4]&(1<<7) != 0 {
		sets[4] = sets[4]&^(1<<7) | 1 // 7 is Sunday too
	}
	c.minute, c.hour, c.dom, c.month, c.dow = sets[0], sets[1], sets[2], sets[3], sets[4]
	c.domStar, c.dowStar = strings.HasPrefix(args[2], "*"), strings.HasPrefix(args[4], "*")
	if c.expr == "" {
		c.expr = strings.Join(canon, " ")
	}
	if (c.domStar || c.dowStar) && !possible(c.month, c.dom) {
		// The day fields are ANDed and no selected month has a selected day.
		return nil, p.errf(p.pos(args[2]), "cron day-of-month %q never occurs in month %q", args[2], args[3])
	}
	return c, nil
}

// possible reports whether some month in months has a day in days
// (February counting its 29th).
func possible(months, days uint64) bool {
	maxDay := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if has(months, m) && days&((1<<uint(maxDay[m]+1))-1) != 0 {
			return true
		}
	}
	return false
}

// parseField reads one cron field: "*", "*/n", "a", "a-b", "a-b/n", "a/n",
// and comma lists of those; names (JAN, MON) where given.
func parseField(f string, lo, hi int, names []string) (set uint64, canon, msg string) {
	if f == "" {
		return 0, "", "empty field"
	}
	parts := strings.Split(f, ",")
	out := make([]string, 0, len(parts))
	for _, part := range parts {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi {
				return 0, "", "bad step " + strconv.Quote(stepText)
			}
			step = n
		}
		var a, b int
		switch {
		case rng == "*":
			a, b = lo, hi
			if len(names) == len(dowNames) {
				b = 6
			}
		case strings.Contains(rng, "-"):
			x, y, _ := strings.Cut(rng, "-")
			var ok1, ok2 bool
			a, ok1 = fieldValue(x, lo, hi, names)
			b, ok2 = fieldValue(y, lo, hi, names)
			if !ok1 || !ok2 {
				return 0, "", "values must be " + strconv.Itoa(lo) + "-" + strconv.Itoa(hi) + nameHint(names)
			}
			if a > b {
				return 0, "", "range " + strconv.Quote(rng) + " runs backwards"
			}
		default:
			var ok bool
			a, ok = fieldValue(rng, lo, hi, names)
			if !ok {
				return 0, "", "values must be " + strconv.Itoa(lo) + "-" + strconv.Itoa(hi) + nameHint(names)
			}
			b = a
			if hasStep {
				b = hi
				if len(names) == len(dowNames) {
					b = 6
				}
			}
		}
		for v := a; v <= b; v += step {
			set |= 1 << uint(v)
		}
		out = append(out, strings.ToUpper(part))
	}
	return set, strings.Join(out, ","), ""
}

func nameHint(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " or names like " + names[0] + "," + names[1]
}

func fieldValue(s string, lo, hi int, names []string) (int, bool) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			if len(names) == len(monthNames) {
				return i + 1, true
			}
			return i, true
		}
	}
	if s == "" || len(s) > 2 {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	return v, true
}
