package source

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Include and exclude keywords see the titles as they are read: charset
// converted, entities decoded once, literal brackets kept, html entries
// titled by their text — for all four kinds.
func TestFilters_SeeTitlesAsRead(t *testing.T) {
	type doc struct {
		kind, ctype string
		build       func(titles []string) []byte
	}
	latin1 := func(s string) []byte { b, _ := charmap.ISO8859_1.NewEncoder().Bytes([]byte(s)); return b }
	esc := func(s string) string { return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s) }
	docs := []doc{
		{KindRSS, "application/rss+xml; charset=ISO-8859-1", func(ts []string) []byte {
			var b strings.Builder
			b.WriteString(`<rss version="2.0"><channel><title>N</title>`)
			for i, x := range ts {
				b.WriteString("<item><title>" + esc(x) + "</title><guid>g" + string(rune('a'+i)) + "</guid></item>")
			}
			return latin1(b.String() + "</channel></rss>")
		}},
		{KindICal, "text/calendar; charset=ISO-8859-1", func(ts []string) []byte {
			var b strings.Builder
			b.WriteString("BEGIN:VCALENDAR\r\n")
			for i, x := range ts {
				b.WriteString("BEGIN:VTODO\r\nUID:u" + string(rune('a'+i)) + "\r\nSUMMARY:" + x + "\r\nDUE:20270110T090000Z\r\nEND:VTODO\r\n")
			}
			return latin1(b.String() + "END:VCALENDAR\r\n")
		}},
		{KindJSON, "application/json", func(ts []string) []byte {
			var parts []string
			for i, x := range ts {
				parts = append(parts, `{"id":"j`+string(rune('a'+i))+`","title":"`+x+`"}`)
			}
			return []byte("[" + strings.Join(parts, ",") + "]")
		}},
		{KindHTML, "text/html; charset=utf-8", func(ts []string) []byte {
			var b strings.Builder
			b.WriteString("<html><body><ul class=\"n\">")
			for i, x := range ts {
				b.WriteString(`<li><a href="/n/` + string(rune('a'+i)) + `">►</a> ` + esc(x) + "</li>")
			}
			return []byte(b.String() + "</ul></body></html>")
		}},
	}
	o := watch.Options{Include: []string{"vector<t>", "café"}, Exclude: []string{"closed"}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range docs {
		t.Run(d.kind, func(t *testing.T) {
			var body atomic.Value
			srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", d.ctype)
				_, _ = w.Write(body.Load().([]byte))
			}))
			spec := watch.Spec{Kind: d.kind, URL: srv.URL + "/list"}
			if d.kind == KindHTML {
				spec.Selector = "ul.n > li"
			}
			s := newTestSource(t, spec, Options{Now: func() time.Time { return now }})
			body.Store(d.build([]string{"Weekly notes"}))
			d1 := watch.Compute(nil, mustFetch(t, s).Items, now, o)
			body.Store(d.build([]string{"Weekly notes", "Vector<T> released", "Café closed", "Café opens"}))
			d2 := watch.Compute(d1.Next, mustFetch(t, s).Items, now, o)
			var got []string
			for _, ev := range d2.Events {
				if ev.Kind == watch.EventNew {
					got = append(got, ev.Item.Title)
				}
			}
			want := []string{"Vector<T> released", "Café opens"}
			if d.kind == KindHTML {
				want = []string{"► Vector<T> released", "► Café opens"}
			}
			if strings.Join(got, "|") != strings.Join(want, "|") || d2.Counts.Filtered != 1 {
				t.Fatalf("new %q (filtered %d), want %q", got, d2.Counts.Filtered, want)
			}
		})
	}
}
