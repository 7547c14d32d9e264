package source

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// calendar wraps VEVENT/VTODO blocks (lines joined with CRLF) in a
// VCALENDAR.
func calendar(components ...string) string {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//herald//test//EN\r\n")
	for _, c := range components {
		b.WriteString(strings.ReplaceAll(strings.TrimSpace(c), "\n", "\r\n"))
		b.WriteString("\r\n")
	}
	b.WriteString("END:VCALENDAR\r\n")
	return b.String()
}

// fetchCalendar serves body as text/calendar and fetches it at now.
func fetchCalendar(t *testing.T, body string, now time.Time, o Options) ([]watch.Item, error) {
	t.Helper()
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/calendar; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	o.Now = func() time.Time { return now }
	res, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindICal, URL: srv.URL}, o))
	return res.Items, err
}

func mustFetchCalendar(t *testing.T, body string, now time.Time, o Options) []watch.Item {
	t.Helper()
	items, err := fetchCalendar(t, body, now, o)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return items
}

func ids(items []watch.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestICalRecurrence_OccurrencesAreItems(t *testing.T) {
	newYork := mustZone(t, "America/New_York")
	shanghai := mustZone(t, "Asia/Shanghai")
	now := time.Date(2026, 9, 20, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		body string
		zone *time.Location
		// want lists the items as "ID|title|due RFC3339" in order.
		want []string
	}{
		{
			name: "weekly with COUNT",
			body: calendar(`BEGIN:VEVENT
UID:hw
SUMMARY:Homework due
DTSTART:20260921T150000Z
RRULE:FREQ=WEEKLY;COUNT=3
END:VEVENT`),
			want: []string{
				"hw#20260921T150000Z|Homework due|2026-09-21T15:00:00Z",
				"hw#20260928T150000Z|Homework due|2026-09-28T15:00:00Z",
				"hw#20261005T150000Z|Homework due|2026-10-05T15:00:00Z",
			},
		},
		{
			name: "EXDATE removes an occurrence, RDATE adds one",
			body: calendar(`BEGIN:VEVENT
UID:lab
SUMMARY:Lab
DTSTART;TZID=Europe/Berlin:20260922T100000
RRULE:FREQ=WEEKLY;UNTIL=20261013T235959Z
EXDATE;TZID=Europe/Berlin:20260929T100000
RDATE;TZID=Europe/Berlin:20261001T140000
END:VEVENT`),
			want: []string{
				"lab#20260922T080000Z|Lab|2026-09-22T08:00:00Z",
				"lab#20261001T120000Z|Lab|2026-10-01T12:00:00Z",
				"lab#20261006T080000Z|Lab|2026-10-06T08:00:00Z",
				"lab#20261013T080000Z|Lab|2026-10-13T08:00:00Z",
			},
		},
		{
			name: "RECURRENCE-ID moves one occurrence and keeps its identity",
			body: calendar(`BEGIN:VEVENT
UID:oh
SUMMARY:Office hours
URL:https://lms.example.edu/oh
DTSTART;TZID=America/New_York:20260922T140000
RRULE:FREQ=WEEKLY;COUNT=3
END:VEVENT`, `BEGIN:VEVENT
UID:oh
RECURRENCE-ID;TZID=America/New_York:20260929T140000
SUMMARY:Office hours (moved)
DTSTART;TZID=America/New_York:20260930T160000
END:VEVENT`, `BEGIN:VEVENT
UID:oh
RECURRENCE-ID:20261006T180000Z
DTSTART;TZID=America/New_York:20261006T090000
END:VEVENT`),
			want: []string{
				"oh#20260922T180000Z|Office hours|2026-09-22T18:00:00Z",
				"oh#20260929T180000Z|Office hours (moved)|2026-09-30T20:00:00Z",
				"oh#20261006T180000Z|Office hours|2026-10-06T13:00:00Z",
			},
		},
		{
			name: "a cancelled instance is removed",
			body: calendar(`BEGIN:VEVENT
UID:sem
SUMMARY:Seminar
DTSTART:20260923T090000Z
RRULE:FREQ=WEEKLY;COUNT=3
END:VEVENT`, `BEGIN:VEVENT
UID:sem
RECURRENCE-ID:20260930T090000Z
DTSTART:20260930T090000Z
STATUS:CANCELLED
END:VEVENT`),
			want: []string{
				"sem#20260923T090000Z|Seminar|2026-09-23T09:00:00Z",
				"sem#20261007T090000Z|Seminar|2026-10-07T09:00:00Z",
			},
		},
		{
			name: "09:00 Europe/Berlin stays 09:00 local across the end of DST",
			body: calendar(`BEGIN:VEVENT
UID:ber
SUMMARY:Tutorial
DTSTART;TZID=Europe/Berlin:20260916T090000
RRULE:FREQ=WEEKLY;INTERVAL=3;COUNT=3
END:VEVENT`),
			want: []string{
				"ber#20260916T070000Z|Tutorial|2026-09-16T07:00:00Z",
				"ber#20261007T070000Z|Tutorial|2026-10-07T07:00:00Z",
				"ber#20261028T080000Z|Tutorial|2026-10-28T08:00:00Z",
			},
		},
		{
			name: "floating 23:30 in America/New_York stays local across the end of DST",
			zone: newYork,
			body: calendar(`BEGIN:VTODO
UID:ny
SUMMARY:Problem set
DUE:20261027T233000
RRULE:FREQ=WEEKLY;COUNT=2
END:VTODO`),
			want: []string{
				"ny#20261028T033000Z|Problem set|2026-10-28T03:30:00Z",
				"ny#20261104T043000Z|Problem set|2026-11-04T04:30:00Z",
			},
		},
		{
			name: "a todo's DUE keeps its local distance from DTSTART",
			body: calendar(`BEGIN:VTODO
UID:sheet
SUMMARY:Exercise sheet
DTSTART;TZID=Europe/Berlin:20261019T090000
DUE;TZID=Europe/Berlin:20261023T235900
RRULE:FREQ=WEEKLY;COUNT=2
END:VTODO`),
			want: []string{
				"sheet#20261019T070000Z|Exercise sheet|2026-10-23T21:59:00Z",
				"sheet#20261026T080000Z|Exercise sheet|2026-10-30T22:59:00Z",
			},
		},
		{
			name: "all-day yearly stays on its date in the default zone",
			zone: shanghai,
			body: calendar(`BEGIN:VEVENT
UID:fee
SUMMARY:Tuition due
DTSTART;VALUE=DATE:20221001
RRULE:FREQ=YEARLY
END:VEVENT`),
			want: []string{"fee#20260930T160000Z|Tuition due|2026-09-30T16:00:00Z"},
		},
		{
			name: "a malformed rule leaves the master standing for itself",
			body: calendar(`BEGIN:VEVENT
UID:bad
SUMMARY:Broken rule
DTSTART:20260801T090000Z
RRULE:FREQ=FORTNIGHTLY;COUNT=3
END:VEVENT`, `BEGIN:VEVENT
UID:hourly
SUMMARY:Hourly
DTSTART:20260801T090000Z
RRULE:FREQ=HOURLY
END:VEVENT`, `BEGIN:VEVENT
UID:one-off
SUMMARY:Exam
DTSTART:20261201T090000Z
END:VEVENT`),
			want: []string{
				"bad|Broken rule|2026-08-01T09:00:00Z",
				"hourly|Hourly|2026-08-01T09:00:00Z",
				"one-off|Exam|2026-12-01T09:00:00Z",
			},
		},
		{
			name: "a rule that matches no date yields only DTSTART",
			body: calendar(`BEGIN:VEVENT
UID:never
SUMMARY:Never
DTSTART:20260920T090000Z
RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30
END:VEVENT`),
			want: []string{"never#20260920T090000Z|Never|2026-09-20T09:00:00Z"},
		},
		{
			name: "a series that ended before the window lists nothing",
			body: calendar(`BEGIN:VEVENT
UID:old
SUMMARY:Last term
DTSTART:20250901T090000Z
RRULE:FREQ=WEEKLY;UNTIL=20260101T000000Z
END:VEVENT`),
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zone := tt.zone
			if zone == nil {
				zone = time.UTC
			}
			items := mustFetchCalendar(t, tt.body, now, Options{DefaultZone: zone})
			var got []string
			for _, it := range items {
				got = append(got, it.ID+"|"+it.Title+"|"+it.Due.UTC().Format(time.RFC3339))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("items:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// An infinite rule lists exactly the occurrences due in [now-7d, now+180d].
func TestICalRecurrence_InfiniteRuleIsWindowed(t *testing.T) {
	body := calendar(`BEGIN:VEVENT
UID:weekly
SUMMARY:Homework due
DTSTART:20200106T170000Z
RRULE:FREQ=WEEKLY
END:VEVENT`)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	items := mustFetchCalendar(t, body, now, Options{})
	from, to := now.Add(-recurLookback), now.Add(recurHorizon)
	var want []string
	for d := time.Date(2020, 1, 6, 17, 0, 0, 0, time.UTC); !d.After(to); d = d.AddDate(0, 0, 7) {
		if !d.Before(from) {
			want = append(want, occurrenceID("weekly", d))
		}
	}
	if got := ids(items); !slices.Equal(got, want) {
		t.Fatalf("%d items %v, want %d %v", len(got), got, len(want), want)
	}
	if len(want) != 26 {
		t.Fatalf("window holds %d weeks, want 26", len(want))
	}
}

func TestICalRecurrence_PerSeriesCap(t *testing.T) {
	body := calendar(`BEGIN:VEVENT
UID:many
SUMMARY:Reading
DTSTART:20260101T000000Z
RRULE:FREQ=DAILY;BYHOUR=0,6,12,18
END:VEVENT`)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	items := mustFetchCalendar(t, body, now, Options{})
	if len(items) != maxOccurrences {
		t.Fatalf("%d items, want the cap %d", len(items), maxOccurrences)
	}
	if first := items[0].Due; !first.Equal(now.Add(-recurLookback)) {
		t.Fatalf("first occurrence %v, want the earliest in the window", first)
	}
}

// The item cap counts the items after expansion.
func TestICalRecurrence_ExpandedItemsCountTowardsMaxItems(t *testing.T) {
	body := calendar(`BEGIN:VEVENT
UID:daily
SUMMARY:Daily quiz
DTSTART:20260101T090000Z
RRULE:FREQ=DAILY
END:VEVENT`)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	_, err := fetchCalendar(t, body, now, Options{MaxItems: 50})
	wantClass(t, err, watch.TooLarge)
	if items := mustFetchCalendar(t, body, now, Options{MaxItems: 200}); len(items) != 187 {
		t.Fatalf("%d items, want 187", len(items))
	}
}

// Rules the engine would walk for thousands of years are bounded by the
// calendar's work budget, and the calendar is TooLarge rather than slow.
func TestICalRecurrence_WorkBudgetIsTooLarge(t *testing.T) {
	var comps []string
	for i := range 24 {
		comps = append(comps, fmt.Sprintf(`BEGIN:VEVENT
UID:never-%d
SUMMARY:Never
DTSTART:00010101T090000Z
RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30
END:VEVENT`, i))
	}
	_, err := fetchCalendar(t, calendar(comps...), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Options{})
	wantClass(t, err, watch.TooLarge)
}

// Two fetches a day apart list the same occurrences under the same
// identities and digests.
func TestICalRecurrence_IdentityAndDigestAreStable(t *testing.T) {
	body := calendar(`BEGIN:VEVENT
UID:hw
SUMMARY:Homework due
DTSTART;TZID=Europe/Berlin:20260105T235900
RRULE:FREQ=WEEKLY;BYDAY=MO,TH
END:VEVENT`, `BEGIN:VEVENT
UID:hw
RECURRENCE-ID;TZID=Europe/Berlin:20261207T235900
SUMMARY:Homework due (extended)
DTSTART;TZID=Europe/Berlin:20261209T235900
END:VEVENT`)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := byID(mustFetchCalendar(t, body, now, Options{}))
	b := byID(mustFetchCalendar(t, body, now.Add(24*time.Hour), Options{}))
	common := 0
	for id, x := range a {
		if y, ok := b[id]; ok {
			common++
			if x.Digest != y.Digest || !x.Due.Equal(y.Due) || x.Title != y.Title {
				t.Fatalf("%s changed between fetches: %+v vs %+v", id, x, y)
			}
		}
	}
	if common < 50 {
		t.Fatalf("only %d occurrences in common", common)
	}
	if it := a["hw#20261207T225900Z"]; it.Title != "Homework due (extended)" || it.Alt != nil {
		t.Fatalf("override %+v", it)
	}
}

// Calendars reproducing real exports' recurring entries, at a time their series run.
func TestICalRecurrence_ExportQuirks(t *testing.T) {
	tests := []struct {
		file  string
		now   time.Time
		check func(t *testing.T, items []watch.Item)
	}{
		{"ical-rrule-folded-exdate.ics", time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), func(t *testing.T, items []watch.Item) {
			// Biweekly MO,TH with WKST=SU until 14 Aug: of 30 June, 3, 14,
			// 17, 28, 31 July, 11 and 14 August the folded EXDATE list
			// removes six.
			var got []string
			for _, it := range items {
				if strings.HasPrefix(it.ID, "5f0c1d2e-rota-4a4b-9c9d-000000000001") {
					got = append(got, it.ID)
				}
			}
			want := []string{"5f0c1d2e-rota-4a4b-9c9d-000000000001#20250630T140000Z", "5f0c1d2e-rota-4a4b-9c9d-000000000001#20250731T140000Z"}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"ical-vtimezone-weekday-rrule-dst.ics", time.Date(2025, 10, 23, 0, 0, 0, 0, time.UTC), func(t *testing.T, items []watch.Item) {
			zurich := mustZone(t, "Europe/Zurich")
			if len(items) < 100 {
				t.Fatalf("%d items", len(items))
			}
			for _, it := range items {
				local := it.Due.In(zurich)
				if local.Hour() != 10 || local.Minute() != 0 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
					t.Fatalf("%s due %v, want weekdays at 10:00 Zurich", it.ID, local)
				}
			}
			if items[0].ID != "3C9A7F10-2B44-4E0D-9A61-6F1B2C3D4E5F#20251024T080000Z" || items[1].ID != "3C9A7F10-2B44-4E0D-9A61-6F1B2C3D4E5F#20251027T090000Z" {
				t.Errorf("first occurrences %s %s", items[0].ID, items[1].ID)
			}
		}},
		{"ical-allday-recurrence-moved.ics", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), func(t *testing.T, items []watch.Item) {
			m := byID(items)
			// The moved instance's RECURRENCE-ID is a zoned DATE-TIME on an
			// all-day series: it replaces the 26 February occurrence.
			moved, ok := m["allday-moved-series#20260226T000000Z"]
			if !ok || !moved.Due.Equal(time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("moved instance %+v", moved)
			}
			for _, it := range items {
				if it.Due.Equal(time.Date(2026, 2, 26, 0, 0, 0, 0, time.UTC)) {
					t.Errorf("26 February still listed as %s", it.ID)
				}
			}
			last := items[len(items)-1]
			if last.ID != "allday-moved-series#20260813T000000Z" {
				t.Errorf("last occurrence %s, want 13 August (UNTIL 17 Aug 22:00Z)", last.ID)
			}
		}},
		{"ical-windows-vtimezones.ics", time.Date(2024, 7, 10, 0, 0, 0, 0, time.UTC), func(t *testing.T, items []watch.Item) {
			m := byID(items)
			const pst = "040000008200E00074C5B7101A82E00800000000D1B2C3D4E5F6A7010000000000000000100000000123456789ABCDEF0123456789ABCDEF"
			for _, ex := range []string{"20240716T190000Z", "20240718T190000Z"} {
				if _, ok := m[pst+"#"+ex]; ok {
					t.Errorf("EXDATE %s (Pacific Standard Time) still listed", ex)
				}
			}
			for _, keep := range []string{"20240714T190000Z", "20241103T200000Z"} {
				if _, ok := m[pst+"#"+keep]; !ok {
					t.Errorf("occurrence %s missing", keep)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := serveFile(t, tt.file, "text/calendar")
			now := tt.now
			res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindICal, URL: srv.URL}, Options{Now: func() time.Time { return now }}))
			checkItems(t, res.Items, nil)
			tt.check(t, res.Items)
		})
	}
}

// The watch-level effect: a weekly deadline series checked twice a week
// apart. The second run records the newly-in-window occurrence quietly (a
// known series continuing is not news), never reports an occurrence as
// changed or removed (16 November left the lookback after its due time:
// it lapses), and reminds of the coming week's deadline — which a series
// standing as one item at its first DTSTART never did.
func TestICalRecurrence_WatchRunsAWeekApart(t *testing.T) {
	body := calendar(`BEGIN:VEVENT
UID:hw
SUMMARY:Homework due
URL:https://lms.example.edu/course/7/hw
DTSTART;TZID=Europe/Berlin:20260907T235900
RRULE:FREQ=WEEKLY
END:VEVENT`)
	o := watch.Options{RemindBefore: []time.Duration{24 * time.Hour}}
	first := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday, before that night's deadline
	second := first.AddDate(0, 0, 7)

	d1 := watch.Compute(nil, mustFetchCalendar(t, body, first, Options{}), first, o)
	if !d1.Baseline {
		t.Fatal("first run is not the baseline")
	}
	items2 := mustFetchCalendar(t, body, second, Options{})
	d2 := watch.Compute(d1.Next, items2, second, o)

	var newIDs, removedIDs, deadlines []string
	for _, ev := range d2.Events {
		switch ev.Kind {
		case watch.EventNew:
			newIDs = append(newIDs, ev.Item.ID)
		case watch.EventChanged:
			t.Errorf("occurrence %s reported changed", ev.Item.ID)
		case watch.EventRemoved:
			removedIDs = append(removedIDs, ev.Item.ID)
			if !ev.Item.Due.Before(second.Add(-recurLookback)) {
				t.Errorf("occurrence %s due %v removed while still in the lookback", ev.Item.ID, ev.Item.Due)
			}
		case watch.EventDeadline:
			deadlines = append(deadlines, ev.Item.ID)
		}
	}
	// Deadlines are Mondays 23:59 Berlin (22:59Z). The window moved from
	// [16 Nov, 22 May] to [23 Nov, 29 May]: 25 May came into view, 16 Nov
	// left; neither is news.
	if len(newIDs) != 0 || len(removedIDs) != 0 {
		t.Errorf("new %v, removed %v; want neither", newIDs, removedIDs)
	}
	if _, ok := d2.Next.Items["hw#20270524T215900Z"]; !ok || d2.Counts.Continued != 1 || d2.Counts.Lapsed != 1 {
		t.Errorf("25 May recorded %t, counts %+v; want it recorded, 1 continued, 1 lapsed", ok, d2.Counts)
	}
	// This week's deadline (30 Nov 23:59 Berlin) is within a day of the
	// second run: its reminder is due.
	if want := []string{"hw#20261130T225900Z"}; !slices.Equal(deadlines, want) {
		t.Errorf("deadline reminders %v, want %v", deadlines, want)
	}
	// The occurrence due the night of the first run is still listed and
	// unchanged.
	if _, ok := byID(items2)["hw#20261123T225900Z"]; !ok {
		t.Error("last week's occurrence dropped inside the lookback")
	}
}
