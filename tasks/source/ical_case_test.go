package source

import (
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// TestICal_NamesAreCaseInsensitive: RFC 5545 names (components,
// properties, parameters) are case-insensitive. A calendar that begins
// BEGIN:vCalendar is read, not failed as schema, and lower- or
// mixed-case BEGIN:vevent, uid:, summary:, dtstart;tzid=…, rrule: are
// read as their upper-case forms, none of them dropped.
func TestICal_NamesAreCaseInsensitive(t *testing.T) {
	t.Run("vCalendar", func(t *testing.T) {
		body := "BEGIN:vCalendar\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Quiz\r\nDTSTART:20261210T090000Z\r\nEND:VEVENT\r\nEND:vCalendar\r\n"
		res, err := fetchCal(t, []byte(body), "text/calendar")
		if err != nil {
			t.Fatalf("BEGIN:vCalendar: %v", err)
		}
		if len(res.Items) != 1 || res.Items[0].ID != "a" || res.Items[0].Title != "Quiz" {
			t.Fatalf("items %+v", res.Items)
		}
	})
	t.Run("lower and mixed case", func(t *testing.T) {
		res, err := fetchCal(t, readTestdata(t, "ical-lower-case-names.ics"), "text/calendar")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]watch.Item{}
		for _, it := range res.Items {
			got[it.ID] = it
		}
		if len(got) != 4 || res.Skipped != 0 {
			t.Fatalf("%d items, %d skipped: %+v; want the lab, the essay and two talks, nothing skipped", len(got), res.Skipped, res.Items)
		}
		berlin, _ := time.LoadLocation("Europe/Berlin")
		lab := got["lab-7@courses.example.edu"]
		if lab.Title != "Lab 7: oscilloscopes" || !lab.Due.Equal(time.Date(2026, 12, 10, 9, 0, 0, 0, berlin)) ||
			lab.URL != "https://courses.example.edu/lab/7" {
			t.Errorf("lab = %+v, want its summary, its Berlin start and its link", lab)
		}
		essay := got["essay-2@courses.example.edu"]
		if essay.Title != "Essay 2 draft" || !essay.Done || !essay.Due.Equal(time.Date(2026, 12, 12, 17, 0, 0, 0, time.UTC)) {
			t.Errorf("essay = %+v, want a done todo due 12-12 17:00Z", essay)
		}
		for _, id := range []string{"talk-1@courses.example.edu#20261215T130000Z", "talk-1@courses.example.edu#20261222T130000Z"} {
			if it, ok := got[id]; !ok || it.Title != "Guest talk, room B" {
				t.Errorf("talk occurrence %s = %+v (present %v)", id, it, ok)
			}
		}
	})
	t.Run("lower-case components count toward the limit", func(t *testing.T) {
		body := "begin:vcalendar\r\n"
		for _, uid := range []string{"a", "b", "c"} {
			body += "begin:vevent\r\nuid:" + uid + "\r\nsummary:x\r\ndtstart:20261210T090000Z\r\nend:vevent\r\n"
		}
		body += "end:vcalendar\r\n"
		if n := countComponents([]byte(body), 10); n != 3 {
			t.Fatalf("counted %d components, want 3", n)
		}
		_, _, err := parseICal([]byte(body), "", nil, time.UTC, 2, quirksNow)
		if watch.ClassOf(err) != watch.TooLarge {
			t.Fatalf("err = %v, want too_large", err)
		}
	})
}

func TestICal_UpperNamesKeepsValues(t *testing.T) {
	for in, want := range map[string]string{
		"summary:Mixed Case: value": "SUMMARY:Mixed Case: value",
		"SUMMARY:already":           "SUMMARY:already",
		`dtstart;tzid="Europe/Berlin";x-a=b,"c;d:e":20261210T090000`: `DTSTART;TZID="Europe/Berlin";X-A=b,"c;d:e":20261210T090000`,
		"url;value=uri:https://x.example/a;b=c":                      "URL;VALUE=uri:https://x.example/a;b=c",
		"organizer;cn=o:mailto:o@x.example":                          "ORGANIZER;CN=o:mailto:o@x.example",
		"novalue":                                                    "novalue",
		`x;p="unterminated:v`:                                        `X;P="unterminated:v`,
	} {
		if got := upperNames(in); got != want {
			t.Errorf("upperNames(%q) = %q, want %q", in, got, want)
		}
	}
}
