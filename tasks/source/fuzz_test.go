package source

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/cascadia"

	"github.com/herald-bridge/herald/tasks/watch"
)

var fuzzBase, _ = url.Parse("https://feeds.example.edu/dir/feed")

// fuzzNow places the recurrence window of the calendar fuzz target.
var fuzzNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// checkItems holds for every parser output: classified errors, items with
// an identity, a digest and an absolute link or none.
func checkItems(t *testing.T, items []watch.Item, err error) {
	t.Helper()
	if err != nil {
		var we *watch.Error
		if !errors.As(err, &we) {
			t.Fatalf("unclassified error %T: %v", err, err)
		}
		return
	}
	seen := map[string]bool{}
	for _, it := range items {
		if it.ID == "" || len(it.Digest) != 64 {
			t.Fatalf("item without identity or digest: %+v", it)
		}
		if it.URL != "" && !strings.HasPrefix(it.URL, "http://") && !strings.HasPrefix(it.URL, "https://") {
			t.Fatalf("non-absolute link %q", it.URL)
		}
		if seen[it.ID] {
			t.Fatalf("duplicate identity %q", it.ID)
		}
		seen[it.ID] = true
	}
}

func FuzzParseFeed(f *testing.F) {
	// Small seeds keep the mutator fast; the quirk fixtures are
	// covered by the unit tests and testdata/fuzz holds the shapes.
	f.Add([]byte(smallRSS))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := parseFeed(body, "", fuzzBase)
		checkItems(t, items, err)
	})
}

func FuzzParseICal(f *testing.F) {
	f.Add(readTestdata(f, "ical-lms-export-utc.ics"))
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:w\r\nSUMMARY:Homework\r\nDTSTART;TZID=Europe/Berlin:20261002T090000\r\n" +
		"RRULE:FREQ=WEEKLY;BYDAY=FR;UNTIL=20270301T000000Z\r\nEXDATE;TZID=Europe/Berlin:20261204T090000\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:w\r\nRECURRENCE-ID;TZID=Europe/Berlin:20261211T090000\r\nDTSTART:20261212T100000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, _, err := parseICal(body, "", fuzzBase, time.UTC, 1000, fuzzNow)
		checkItems(t, items, err)
	})
}

func FuzzParseHTML(f *testing.F) {
	f.Add(readTestdata(f, "html-notices.html"), "ul.notices > li")
	f.Add([]byte(`<base href="//x"><p><a href="javascript:alert(1)">x</a></p><p>text</p>`), "p")
	f.Fuzz(func(t *testing.T, body []byte, selector string) {
		sel, err := cascadia.Compile(selector)
		if err != nil {
			return
		}
		items, err := parseHTML(body, "text/html", fuzzBase, sel)
		checkItems(t, items, err)
	})
}

// FuzzParseJSON fuzzes the response body; the field paths come from an
// approved spec, not from the peer, so a fixed set of specs is used.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`[{"id":41023549,"name":"2.15.2","html_url":"https://github.com/github/licensed/releases/tag/2.15.2","published_at":"2021-04-06T21:17:26Z","body":"x\r\ny"},{"id":2,"name":null}]`))
	f.Add([]byte(`{"data":{"tasks":[{"key":"a","when":"2026-12-01 09:00"}]}}`))
	specs := []watch.Spec{
		{},
		{ID: "id", Title: "name", Link: "html_url", Due: "published_at"},
		{Items: "data.tasks", ID: "key", Due: "when"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, spec := range specs {
			got, err := parseJSON(body, "", fuzzBase, spec, time.UTC)
			checkItems(t, got, err)
		}
	})
}
