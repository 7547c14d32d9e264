package source

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/herald-bridge/herald/tasks/watch"
)

var quirksNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func fetchCal(t *testing.T, body []byte, ctype string) (watch.Result, error) {
	t.Helper()
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}))
	return fetch(t, newTestSource(t, watch.Spec{Kind: KindICal, URL: srv.URL + "/cal.ics"}, Options{Now: func() time.Time { return quirksNow }}))
}

// One unreadable line (NUL-padded TZID, ORGANIZER without a value, a
// quoted ORGANIZER="mailto:…", a parameter without a name, an END with no
// BEGIN) loses only itself: every VEVENT and VTODO is read, the broken
// quoted TZID is repaired, and the result says how much was left out.
func TestICalLenient_OneBadLineLosesNothing(t *testing.T) {
	res, err := fetchCal(t, readTestdata(t, "ical-bad-lines.ics"), "text/calendar")
	if err != nil {
		t.Fatal(err)
	}
	ny := mustZone(t, "America/New_York")
	want := map[string]time.Time{
		"bad-lines-1": time.Date(2026, 12, 7, 9, 0, 0, 0, ny),
		"bad-lines-2": time.Date(2026, 12, 8, 17, 0, 0, 0, time.UTC),
		"bad-lines-3": time.Date(2026, 12, 9, 14, 0, 0, 0, ny),
		"bad-lines-4": time.Date(2026, 12, 11, 17, 0, 0, 0, ny),
	}
	m := byID(res.Items)
	if len(res.Items) != len(want) {
		t.Fatalf("%d items: %+v", len(res.Items), res.Items)
	}
	for id, due := range want {
		if !m[id].Due.Equal(due) {
			t.Errorf("%s due %v, want %v", id, m[id].Due, due)
		}
	}
	// ORGANIZER, ORGANIZER;CN=…, the unclosed ATTENDEE quote, X-BROKEN;=…
	// and the stray END:VEVENT.
	if res.Skipped != 5 {
		t.Errorf("skipped %d, want 5", res.Skipped)
	}
}

// A calendar cut off inside a component is refused, never read as the
// entries before the cut (that would report the rest removed).
func TestI2_TruncatedCalendarIsAnError(t *testing.T) {
	for _, body := range []string{
		"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261201T090000Z\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\n",
		"BEGIN:VCALENDAR\r\nBEGIN:VTODO\r\nUID:a\r\nDUE:20261201T090000Z\r\nEND:VTODO\r\nBEGIN:VTODO\r\nUID:b\r\nDUE:2026",
		"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261201T090000Z\r\nEND:VEVENT\r\nBEGIN:VTODO\r\nUID:b\r\nSUMMARY:cut her",
	} {
		_, err := fetchCal(t, []byte(body), "text/calendar")
		wantClass(t, err, watch.Schema)
		if !strings.Contains(err.Error(), "truncated") {
			t.Errorf("error %q does not say truncated", err)
		}
	}
}

// Windows zone names and Outlook display names map to their IANA zones,
// DST included; an unknown name floats in the default zone rather than
// being guessed from an offset.
func TestICalZones_WindowsAndDisplayNames(t *testing.T) {
	ny, berlin, shanghai := mustZone(t, "America/New_York"), mustZone(t, "Europe/Berlin"), mustZone(t, "Asia/Shanghai")
	tests := []struct {
		tzid string
		want *time.Location
	}{
		{"Eastern Standard Time", ny},
		{"(UTC-05:00) Eastern Time (US & Canada)", ny},
		{"(GMT-05.00) Eastern Time (US & Canada)", ny},
		{"W. Europe Standard Time", berlin},
		{"W. Europe Standard Time 1", berlin},
		{"(UTC+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna", berlin},
		{"China Standard Time", shanghai},
		{"(UTC+08:00) Beijing, Chongqing, Hong Kong, Urumqi", shanghai},
		{"\"China Standard Time\"", shanghai},
		{"/example.org/20260101_1/Europe/Berlin", berlin},
		{"(UTC+01:00) Somewhere Unknown", nil},
	}
	for _, tt := range tests {
		for _, comp := range []string{"VEVENT", "VTODO"} {
			prop := "DTSTART"
			if comp == "VTODO" {
				prop = "DUE"
			}
			tzid := tt.tzid
			if strings.ContainsAny(tzid, ",:;") && !strings.HasPrefix(tzid, `"`) {
				tzid = `"` + tzid + `"`
			}
			// Summer and winter: the mapping must carry DST, not an offset.
			for _, day := range []string{"20260715", "20261215"} {
				body := fmt.Sprintf("BEGIN:VCALENDAR\r\nBEGIN:%s\r\nUID:z\r\nSUMMARY:Z\r\n%s;TZID=%s:%sT090000\r\nEND:%s\r\nEND:VCALENDAR\r\n", comp, prop, tzid, day, comp)
				res, err := fetchCal(t, []byte(body), "text/calendar")
				if err != nil || len(res.Items) != 1 {
					t.Fatalf("%s %s: %+v %v", tt.tzid, comp, res.Items, err)
				}
				loc := tt.want
				if loc == nil {
					loc = time.UTC // floating, in the default zone
				}
				d, _ := time.ParseInLocation("20060102T150405", day+"T090000", loc)
				if got := res.Items[0].Due; !got.Equal(d) {
					t.Errorf("%q %s %s: due %v, want %v", tt.tzid, comp, day, got, d)
				}
			}
		}
	}
}

func TestICalZones_EveryMappedZoneLoads(t *testing.T) {
	for name, tbl := range map[string]map[string]string{"windows": windowsZones, "display": displayZones} {
		for k, v := range tbl {
			if _, err := time.LoadLocation(v); err != nil {
				t.Errorf("%s %q → %q: %v", name, k, v, err)
			}
		}
	}
}

// Versions of one entry (same UID and RECURRENCE-ID): the highest
// SEQUENCE is the entry, then the latest DTSTAMP, whatever the order.
func TestICal_HighestSequenceWins(t *testing.T) {
	v := func(comp, uid, extra, summary, seq, stamp, at string) string {
		prop := "DTSTART"
		if comp == "VTODO" {
			prop = "DUE"
		}
		return "BEGIN:" + comp + "\r\nUID:" + uid + "\r\n" + extra + "SUMMARY:" + summary + "\r\nSEQUENCE:" + seq + "\r\nDTSTAMP:" + stamp + "\r\n" + prop + ":" + at + "\r\nEND:" + comp + "\r\n"
	}
	body := "BEGIN:VCALENDAR\r\n" +
		// Stale first, current second.
		v("VEVENT", "ev", "", "Exam (old room)", "0", "20261101T000000Z", "20261210T090000Z") +
		v("VEVENT", "ev", "", "Exam (room 4)", "2", "20261102T000000Z", "20261210T100000Z") +
		// Current first, stale second.
		v("VTODO", "td", "", "Essay (extended)", "3", "20261103T000000Z", "20261220T235900Z") +
		v("VTODO", "td", "", "Essay", "1", "20261104T000000Z", "20261213T235900Z") +
		// Same SEQUENCE: the later DTSTAMP.
		v("VTODO", "ts", "", "Quiz (later stamp)", "1", "20261105T000000Z", "20261215T090000Z") +
		v("VTODO", "ts", "", "Quiz", "1", "20261101T000000Z", "20261214T090000Z") +
		// A weekly series with two versions of one override.
		"BEGIN:VEVENT\r\nUID:wk\r\nSUMMARY:Lab\r\nDTSTART:20261201T140000Z\r\nRRULE:FREQ=WEEKLY;COUNT=3\r\nEND:VEVENT\r\n" +
		v("VEVENT", "wk", "RECURRENCE-ID:20261208T140000Z\r\n", "Lab (moved, final)", "4", "20261106T000000Z", "20261209T140000Z") +
		v("VEVENT", "wk", "RECURRENCE-ID:20261208T140000Z\r\n", "Lab (moved)", "2", "20261105T000000Z", "20261210T140000Z") +
		"END:VCALENDAR\r\n"
	res, err := fetchCal(t, []byte(body), "text/calendar")
	if err != nil {
		t.Fatal(err)
	}
	m := byID(res.Items)
	for id, title := range map[string]string{"ev": "Exam (room 4)", "td": "Essay (extended)", "ts": "Quiz (later stamp)", "wk#20261208T140000Z": "Lab (moved, final)"} {
		if m[id].Title != title {
			t.Errorf("%s: %q, want %q", id, m[id].Title, title)
		}
	}
	if !m["wk#20261208T140000Z"].Due.Equal(time.Date(2026, 12, 9, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("override due %v", m["wk#20261208T140000Z"].Due)
	}
}

// SUMMARY is plain text: its angle brackets are the title.
func TestICal_PlainTextSummaryKeepsBrackets(t *testing.T) {
	body := "BEGIN:VCALENDAR\r\nBEGIN:VTODO\r\nUID:t\r\nSUMMARY:Implement Vector<T>\r\nDUE:20261210T090000Z\r\nEND:VTODO\r\n" +
		"BEGIN:VEVENT\r\nUID:e\r\nSUMMARY:Talk: the <video> element\\, in depth\r\nDTSTART:20261211T090000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	res, err := fetchCal(t, []byte(body), "text/calendar")
	if err != nil {
		t.Fatal(err)
	}
	m := byID(res.Items)
	if m["t"].Title != "Implement Vector<T>" || m["e"].Title != "Talk: the <video> element, in depth" {
		t.Fatalf("%+v", res.Items)
	}
}

// Calendars follow the charset of the Content-Type too, then the BOM, and
// undeclared bytes that are not UTF-8 read as Windows-1252.
func TestICalCharset_HTTPCharsetAndBOM(t *testing.T) {
	const title = "Réunion année 2027 — Zürich"
	doc := "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:c\r\nSUMMARY:" + title + "\r\nDTSTART:20261210T090000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	latin1 := strings.ReplaceAll(doc, "—", "-")
	tests := []struct {
		name, ctype, want string
		body              []byte
	}{
		{"latin-1 with charset", "text/calendar; charset=ISO-8859-1", strings.ReplaceAll(title, "—", "-"), encode(t, charmap.ISO8859_1, latin1)},
		{"windows-1252 undeclared", "text/calendar", title, encode(t, charmap.Windows1252, doc)},
		{"utf-16 bom", "text/calendar", title, encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), doc)},
		{"utf-8", "text/calendar; charset=utf-8", title, []byte(doc)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := fetchCal(t, tt.body, tt.ctype)
			if err != nil || len(res.Items) != 1 || res.Items[0].Title != tt.want {
				t.Fatalf("%+v %v", res.Items, err)
			}
		})
	}
}
