package source

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI2_NoGUIDNoLinkRetitleIsAChange: an RSS item with neither guid nor
// link keeps its identity when retitled (it is known by its enclosure,
// date and text), so a retitle is one "changed", never "new" plus a false
// "removed"; an edit of its text alone is a change too, and a snapshot
// that knew such items by their titles still knows them.
func TestI2_NoGUIDNoLinkRetitleIsAChange(t *testing.T) {
	type entry struct{ title, date, body, enclosure string }
	build := func(es []entry) []byte {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Parish notices</title><link>https://parish.example.org/</link><description>d</description>`)
		for _, e := range es {
			b.WriteString("<item><title>" + e.title + "</title>")
			if e.date != "" {
				b.WriteString("<pubDate>" + e.date + "</pubDate>")
			}
			if e.enclosure != "" {
				b.WriteString(`<enclosure url="` + e.enclosure + `" length="1000" type="audio/mpeg"/>`)
			}
			b.WriteString("<description>" + e.body + "</description></item>")
		}
		b.WriteString("</channel></rss>")
		return []byte(b.String())
	}
	base, _ := url.Parse("https://parish.example.org/feed.xml")
	read := func(es []entry) []watch.Item {
		t.Helper()
		items, err := parseFeed(build(es), "", base)
		if err != nil {
			t.Fatal(err)
		}
		checkItems(t, items, nil)
		return items
	}
	entries := []entry{
		{"Hall closed", "Mon, 30 Nov 2026 09:00:00 GMT", "The hall is closed on Friday.", ""},
		{"Choir practice", "Tue, 01 Dec 2026 09:00:00 GMT", "Practice moves to Thursday.", ""},
		{"Sermon, week 48", "", "Audio of Sunday's sermon.", "https://parish.example.org/audio/48.mp3"},
		{"Bake sale", "", "Saturday from ten.", ""},
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	one := func(t *testing.T, d watch.Diff, title string) {
		t.Helper()
		if len(d.Events) != 1 || d.Events[0].Kind != watch.EventChanged || d.Events[0].Item.Title != title {
			t.Fatalf("events %+v, want one change titled %q", d.Events, title)
		}
	}
	d := watch.Compute(nil, read(entries), now, watch.Options{})
	for i, retitled := range []string{"Hall closed on Friday", "Choir practice moved", "Sermon for week 48", "Bake sale this Saturday"} {
		es := append([]entry(nil), entries...)
		es[i].title = retitled
		next := watch.Compute(d.Next, read(es), now.Add(time.Hour), watch.Options{})
		one(t, next, retitled)
	}
	es := append([]entry(nil), entries...)
	es[1].body = "Practice moves to Thursday at seven."
	one(t, watch.Compute(d.Next, read(es), now.Add(time.Hour), watch.Options{}), "Choir practice")

	// A snapshot that knew these items by their normalised titles.
	old := read(entries)
	for i := range old {
		old[i].ID, old[i].Alt = normTitle(old[i].Title), nil
	}
	legacy := watch.Compute(nil, old, now, watch.Options{})
	if next := watch.Compute(legacy.Next, read(entries), now.Add(time.Hour), watch.Options{}); len(next.Events) != 0 {
		t.Fatalf("items once known by title: events %+v, want none", next.Events)
	}
}
