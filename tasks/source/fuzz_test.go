package source

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// FuzzFeedCharset: whatever the bytes and the Content-Type, the text
// handed on is valid UTF-8 and the reader ends classified.
func FuzzFeedCharset(f *testing.F) {
	f.Add([]byte("\xff\xfe<\x00r\x00s\x00s\x00>\x00"), "application/xml")
	f.Add([]byte(`<?xml version="1.0" encoding="shift_jis"?><rss><channel><item><title>\x82\xa0</title></item></channel></rss>`), "text/xml; charset=utf-8")
	f.Add([]byte("\x00\x00\x00<\x00\x00\x00f"), "")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		if out := toUTF8(body, ctype, true); !utf8.Valid(out) {
			t.Fatalf("invalid UTF-8 out of %q", body)
		}
		items, err := parseFeed(body, ctype, fuzzBase)
		checkItems(t, items, err)
	})
}

// FuzzGuessSelector: a picked selector compiles and selects something.
func FuzzGuessSelector(f *testing.F) {
	f.Add(readTestdata(f, "html-widget-list.html"))
	f.Add([]byte(`<ul class="a"><li><a href="/1">one item</a></li><li><a href="/2">two items</a></li><li><a href="/3">three items</a></li></ul>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sel, ok := guessSelector(body, "text/html")
		if !ok {
			return
		}
		c, err := cascadia.Compile(sel)
		if err != nil {
			t.Fatalf("picked %q: %v", sel, err)
		}
		items, err := parseHTML(body, "text/html", fuzzBase, c)
		checkItems(t, items, err)
	})
}

func FuzzParseICal(f *testing.F) {
	f.Add(readTestdata(f, "ical-lms-export-utc.ics"))
	f.Add(readTestdata(f, "ical-bad-lines.ics"))
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
	f.Add([]byte(`[{"id":90001000,"name":"v3.2.1","html_url":"https://code.example.com/acme/widget/releases/tag/v3.2.1","published_at":"2026-10-06T21:17:26Z","body":"x\r\ny"},{"id":2,"name":null}]`))
	f.Add([]byte(`{"id":7,"name":"latest","url":"https://api.example.com/r/7","html_url":"https://example.com/r/7"}`))
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
