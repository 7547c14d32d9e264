package source

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/herald-bridge/herald/tasks/watch"
)

func TestRSS_AtomRelativeLinksResolveAgainstFeedURL(t *testing.T) {
	srv := serveFile(t, "atom-relative-links-no-base.xml", "application/atom+xml")
	res := mustFetch(t, newTestSource(t, watch.Spec{URL: srv.URL + "/blog/index.atom"}, Options{}))
	if res.Kind != KindRSS || len(res.Items) == 0 {
		t.Fatalf("kind %q, %d items", res.Kind, len(res.Items))
	}
	for _, it := range res.Items {
		if !strings.HasPrefix(it.URL, srv.URL+"/blog/") {
			t.Fatalf("item %q link %q not resolved against the feed URL", it.ID, it.URL)
		}
		if !strings.HasPrefix(it.ID, "tag:notes.example.net,2026:") || it.Title == "" || len(it.Digest) != 64 {
			t.Fatalf("item %+v", it)
		}
	}
}

func TestRSS_AtomXMLBase(t *testing.T) {
	srv := serveFile(t, "atom-xml-base-nested.xml", "application/atom+xml")
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + "/feed"}, Options{}))
	n := 0
	for _, it := range res.Items {
		if strings.Contains(it.Title, "Alternate link") {
			n++
			if it.URL != "http://feeds.example.org/checks/base/target.html" {
				t.Errorf("%q resolved to %q", it.Title, it.URL)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alternate-link tests found")
	}
}

func TestRSS_NoGUIDFeedsUseLinks(t *testing.T) {
	tests := []struct {
		file, title string
		items       int
	}{
		{"rss2-latin1-noguid-cdata.xml", "Câmara aprova orçamento para 2027 após três horas de debate", 4},
		{"rss2-gb2312-noguid.xml", "校园开放日安排，欢迎参加", 3},
		{"rss2-windows1251.xml", "Заметка #204", 3},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := serveFile(t, tt.file, "text/xml")
			res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL}, Options{}))
			if len(res.Items) != tt.items {
				t.Fatalf("%d items, want %d", len(res.Items), tt.items)
			}
			first := res.Items[0]
			if first.Title != tt.title {
				t.Fatalf("title %q, want %q (charset not converted?)", first.Title, tt.title)
			}
			for _, it := range res.Items {
				if it.ID != it.URL || !strings.HasPrefix(it.URL, "http") {
					t.Fatalf("identity %q should be the link %q", it.ID, it.URL)
				}
				if len(it.Alt) != 1 || it.Alt[0] != normTitle(it.Title) {
					t.Fatalf("alt %q", it.Alt)
				}
			}
		})
	}
}

func TestRSS_JSONFeed(t *testing.T) {
	srv := serveFile(t, "jsonfeed-1.1-path-ids.json", "application/feed+json")
	res := mustFetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{}))
	if res.Kind != KindRSS || len(res.Items) != 4 {
		t.Fatalf("kind %q, %d items", res.Kind, len(res.Items))
	}
	it := res.Items[0]
	if it.ID != "user/posts/2026-11-28-sauerteig/index.md" || it.URL != "https://notizblock.example.de/posts/2026-11-28-sauerteig/" || it.Title != "Sauerteig, zweiter Versuch" {
		t.Fatalf("%+v", it)
	}
}

func TestRSS_DigestFollowsContent(t *testing.T) {
	feed := func(desc string) []byte {
		return []byte(`<rss version="2.0"><channel><item><title>A</title><link>https://x.example/a</link><description>` + desc + `</description><pubDate>` + desc + `</pubDate></item></channel></rss>`)
	}
	base, _ := url.Parse("https://x.example/feed")
	a, _ := parseFeed(feed("hello  world"), "", base)
	b, _ := parseFeed(feed("&lt;p&gt;hello world&lt;/p&gt;"), "", base)
	c, _ := parseFeed(feed("hello there"), "", base)
	if a[0].Digest != b[0].Digest {
		t.Fatal("markup and whitespace changed the digest")
	}
	if a[0].Digest == c[0].Digest {
		t.Fatal("changed text kept the digest")
	}
}

func TestICal_CanvasStyleExport(t *testing.T) {
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	srv := serveFile(t, "ical-canvas-style.ics", "text/calendar; charset=utf-8")
	now := func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
	res := mustFetch(t, newTestSource(t, watch.Spec{URL: srv.URL + "/feeds/calendars/user_x.ics"}, Options{DefaultZone: shanghai, Now: now}))
	if res.Kind != KindICal {
		t.Fatalf("kind %q", res.Kind)
	}
	items := byID(res.Items)
	denver, _ := time.LoadLocation("America/Denver")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	tests := []struct {
		id, title, url string
		due            time.Time
		done           bool
	}{
		{"event-assignment-48213", "Essay 3 [HIST 210]", "https://canvas.example.edu/courses/1207/assignments/48213", time.Date(2026, 12, 4, 6, 59, 0, 0, time.UTC), false},
		{"event-calendar-event-9921", "Final exam [CHEM 101]", srv.URL + "/courses/1302/calendar_events/9921", time.Date(2026, 12, 8, 9, 30, 0, 0, denver), false},
		{"event-calendar-event-9930", "Reading day (no classes)", "", time.Date(2026, 12, 11, 0, 0, 0, 0, shanghai), false},
		// A weekly series of four, one instance moved by RECURRENCE-ID.
		{"event-calendar-event-9940#20261201T210000Z", "Office hours", "", time.Date(2026, 12, 1, 14, 0, 0, 0, denver), false},
		{"event-calendar-event-9940#20261208T210000Z", "Office hours (moved)", "", time.Date(2026, 12, 8, 16, 0, 0, 0, denver), false},
		{"event-calendar-event-9940#20261215T210000Z", "Office hours", "", time.Date(2026, 12, 15, 14, 0, 0, 0, denver), false},
		{"event-calendar-event-9940#20261222T210000Z", "Office hours", "", time.Date(2026, 12, 22, 14, 0, 0, 0, denver), false},
		{"event-calendar-event-9950", "Review session", "", time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC), true},
		{"todo-assignment-50110", "Lab report 4 [PHYS 150]", "", time.Date(2026, 12, 6, 23, 59, 0, 0, berlin), false},
		{"todo-assignment-50111", "Quiz 7 (floating)", "", time.Date(2026, 12, 7, 9, 0, 0, 0, shanghai), false},
		{"todo-assignment-50098", "Problem set 9", "", time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), true},
		{"todo-assignment-50120", "Unknown zone todo", "", time.Date(2026, 12, 10, 12, 0, 0, 0, shanghai), false},
	}
	if len(res.Items) != len(tests) {
		t.Fatalf("%d items, want %d", len(res.Items), len(tests))
	}
	for _, tt := range tests {
		it, ok := items[tt.id]
		if !ok {
			t.Fatalf("missing %s in %v", tt.id, res.Items)
		}
		if it.Title != tt.title || it.URL != tt.url || !it.Due.Equal(tt.due) || it.Done != tt.done {
			t.Errorf("%s: got %q %q %v done=%v, want %q %q %v done=%v", tt.id, it.Title, it.URL, it.Due, it.Done, tt.title, tt.url, tt.due, tt.done)
		}
	}
}

func TestICal_ExportQuirks(t *testing.T) {
	// now places the window of the recurring entries (see
	// TestICalRecurrence_*): in the exports' own time where it matters.
	tests := []struct {
		file  string
		now   time.Time
		items int
		check func(t *testing.T, m map[string]watch.Item)
	}{
		{"ical-lms-export-utc.ics", time.Time{}, 2, func(t *testing.T, m map[string]watch.Item) {
			if it := m["8812@courses.example.edu"]; !it.Due.Equal(time.Date(2026, 11, 10, 6, 30, 0, 0, time.UTC)) || it.Title != "Seminar 4" {
				t.Errorf("%+v", it)
			}
		}},
		{"ical-windows-vtimezones.ics", time.Date(2024, 6, 4, 0, 0, 0, 0, time.UTC), 239, func(t *testing.T, m map[string]watch.Item) {
			for _, it := range m {
				// The broken quoted TZID is repaired and its Windows name
				// mapped: the series' first occurrence is 09:00 Berlin.
				if it.Title == "Write up yesterday's notes" && it.Due.Equal(time.Date(2024, 6, 4, 7, 0, 0, 0, time.UTC)) {
					return
				}
			}
			t.Error("repaired event missing")
		}},
		{"ical-vtodo-floating-due.ics", time.Date(2007, 3, 1, 0, 0, 0, 0, time.UTC), 13, func(t *testing.T, m map[string]watch.Item) {
			done := 0
			for _, it := range m {
				if it.Done {
					done++
				}
			}
			if done == 0 {
				t.Error("no completed todos recognised")
			}
		}},
		{"ical-vtodo-vjournal-vfreebusy.ics", time.Time{}, 4, func(t *testing.T, m map[string]watch.Item) {
			pacific, _ := time.LoadLocation("America/Los_Angeles")
			if it := m["7A1F0C22-1B2C-4D5E-8F90-A1B2C3D4E5F6"]; !it.Due.Equal(time.Date(2003, 11, 3, 10, 30, 0, 0, pacific)) {
				t.Errorf("US/Pacific event due %v", it.Due)
			}
			if it := m["todo-17@planner.example.com"]; !it.Due.Equal(time.Date(2003, 4, 30, 23, 59, 59, 0, time.UTC)) {
				t.Errorf("floating todo due %v", it.Due)
			}
		}},
		{"ical-floating-allday.ics", time.Time{}, 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := serveFile(t, tt.file, "text/calendar")
			now := tt.now
			if now.IsZero() {
				now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			}
			res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindICal, URL: srv.URL}, Options{Now: func() time.Time { return now }}))
			if len(res.Items) != tt.items {
				t.Fatalf("%d items, want %d", len(res.Items), tt.items)
			}
			if tt.check != nil {
				tt.check(t, byID(res.Items))
			}
		})
	}
}

func TestICal_100kEventsIsTooLargeWithBoundedMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n")
	for i := range 100000 {
		fmt.Fprintf(&b, "BEGIN:VEVENT\r\nUID:e%d@x\r\nDTSTART:20261201T090000Z\r\nSUMMARY:E%d\r\nEND:VEVENT\r\n", i, i)
	}
	b.WriteString("END:VCALENDAR\r\n")
	body := b.String()
	if len(body) > DefaultMaxBytes {
		t.Fatalf("test calendar is %d bytes, over the byte cap", len(body))
	}
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	var err error
	n := allocated(func() {
		_, err = fetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{}))
	})
	wantClass(t, err, watch.TooLarge)
	t.Logf("allocated %d MiB", n>>20)
	if n > 64<<20 {
		t.Fatalf("allocated %d MiB", n>>20)
	}
}

func TestJSON_ReleasesAPIList(t *testing.T) {
	srv := serveFile(t, "json-releases-list.json", "application/json; charset=utf-8")
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: srv.URL, ID: "id", Title: "name", Link: "html_url", Due: "published_at"}, Options{}))
	if len(res.Items) != 4 {
		t.Fatalf("%d items", len(res.Items))
	}
	first := res.Items[0]
	if first.ID != "90001000" || first.Title != "v3.2.1" || first.URL != "https://code.example.com/acme/widget/releases/tag/v3.2.1" ||
		!first.Due.Equal(time.Date(2026, 10, 6, 21, 17, 26, 0, time.UTC)) {
		t.Fatalf("%+v", first)
	}
	for _, it := range res.Items {
		if it.Title == "" {
			t.Fatalf("release %s has no title (a null name must fall back)", it.ID)
		}
	}
	// Detected without a kind, with default field names.
	res = mustFetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{}))
	if res.Kind != KindJSON || len(res.Items) != 4 || res.Items[0].URL == "" {
		t.Fatalf("detected: %q %+v", res.Kind, res.Items)
	}
}

func TestJSON_NestedItemsAndDueFormats(t *testing.T) {
	body := `{"data":{"tasks":[
		{"key":"a","t":"RFC3339","when":"2026-12-01T09:00:00+08:00","href":"/t/a"},
		{"key":"b","t":"unix seconds","when":1796086800},
		{"key":"c","t":"unix ms","when":1796086800000},
		{"key":"d","t":"local","when":"2026-12-01 09:00"},
		{"key":"e","t":"numeric string","when":"1796086800"},
		{"key":"f","t":"garbage","when":"soon"}]}}`
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	}))
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: srv.URL + "/api/", Items: "data.tasks", ID: "key", Title: "t", Link: "href", Due: "when"}, Options{DefaultZone: shanghai}))
	want := time.Date(2026, 12, 1, 9, 0, 0, 0, shanghai)
	m := byID(res.Items)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if !m[id].Due.Equal(want) {
			t.Errorf("%s (%s): due %v, want %v", id, m[id].Title, m[id].Due, want)
		}
	}
	if !m["f"].Due.IsZero() {
		t.Errorf("garbage due parsed as %v", m["f"].Due)
	}
	if m["a"].URL != srv.URL+"/t/a" {
		t.Errorf("link %q", m["a"].URL)
	}
	if !gjson.Valid(body) {
		t.Fatal("test body invalid")
	}
}

func TestJSON_NotAnArrayIsSchema(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[1,2,3]`))
	}))
	_, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindJSON, URL: srv.URL}, Options{}))
	wantClass(t, err, watch.Schema)
}

func fetchHTML(t *testing.T, file string) []watch.Item {
	t.Helper()
	srv := serveFile(t, file, "text/html; charset=utf-8")
	return mustFetch(t, newTestSource(t, watch.Spec{Kind: KindHTML, URL: srv.URL + "/notices", Selector: "ul.notices > li"}, Options{})).Items
}

// TestI2_HTMLReorderIsNoChange: the same notices in another order and
// with other white space yield the same identities and digests.
func TestI2_HTMLReorderIsNoChange(t *testing.T) {
	a, b := fetchHTML(t, "html-notices.html"), fetchHTML(t, "html-notices-reordered.html")
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("%d / %d items", len(a), len(b))
	}
	mb := byID(b)
	for _, it := range a {
		if mb[it.ID].Digest != it.Digest {
			t.Fatalf("%q: digest changed on reorder", it.ID)
		}
	}
	m := byID(a)
	if it := m["https://dept.example.edu/notices/2026/exam-timetable"]; it.Title != "Exam timetable published 2026-11-20" {
		t.Fatalf("link identity / title: %+v", a)
	}
	if _, ok := m["https://dept.example.edu/library/hours"]; !ok {
		t.Fatal("host-relative href not resolved against <base>")
	}
	if it := m["room 204 closed for maintenance 2026-11-15"]; it.URL != "" || it.Title != "Room 204 closed for maintenance 2026-11-15" {
		t.Fatalf("text identity: %+v", a)
	}
}

func TestHTML_ChangedTextChangesOneDigest(t *testing.T) {
	a, c := byID(fetchHTML(t, "html-notices.html")), byID(fetchHTML(t, "html-notices-changed.html"))
	changed := 0
	for id, it := range a {
		other, ok := c[id]
		if !ok {
			t.Fatalf("%q vanished", id)
		}
		if other.Digest != it.Digest {
			changed++
		}
	}
	if changed != 1 {
		t.Fatalf("%d digests changed, want 1", changed)
	}
}

func TestHTML_BlogIndex(t *testing.T) {
	srv := serveFile(t, "html-blog-index.html", "text/html")
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindHTML, URL: srv.URL, Selector: "div.weblogPost"}, Options{}))
	if len(res.Items) != 4 || res.Items[0].Title != "Night trains" || res.Items[0].URL != "http://margins.example.com/2026/03/04/night-trains" ||
		res.Items[2].URL != srv.URL+"/2026/02/25/bread" {
		t.Fatalf("%+v", res.Items)
	}
}

// A page watched without a selector gets the one its repeated entries
// suggest, and the result says which; a page with no such structure is
// refused with a message asking for one.
func TestHTML_WatchWithoutSelectorPicksTheRepeatedEntries(t *testing.T) {
	tests := []struct{ file, want string }{
		{"html-notices.html", "ul.notices > li"},
		{"html-blog-index.html", "div.weblogPost"},
		{"html-widget-list.html", "div.release"},
	}
	for _, tt := range tests {
		for _, kind := range []string{"", KindHTML} {
			srv := serveFile(t, tt.file, "text/html")
			res := mustFetch(t, newTestSource(t, watch.Spec{Kind: kind, URL: srv.URL}, Options{}))
			if res.Selector != tt.want || len(res.Items) < 3 {
				t.Fatalf("%s: selector %q with %d items, want %q", tt.file, res.Selector, len(res.Items), tt.want)
			}
		}
	}
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body><p>Just one paragraph.</p></body></html>"))
	}))
	_, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindHTML, URL: srv.URL}, Options{}))
	wantClass(t, err, watch.Schema)
	if !strings.Contains(err.Error(), "selector") {
		t.Fatalf("error %q does not ask for a selector", err)
	}
}

// An entry's title is its heading, else its whole text: a link's own text
// is often just an arrow.
func TestHTML_TitleIsTheEntrysTextNotItsFirstLink(t *testing.T) {
	srv := serveFile(t, "html-widget-list.html", "text/html; charset=utf-8")
	res := mustFetch(t, newTestSource(t, watch.Spec{Kind: KindHTML, URL: srv.URL, Selector: "div.release"}, Options{}))
	want := []string{"► Clicker 1.1 (2026-11-28)", "► Clicker 1.0 (2026-10-02)", "Clicker 0.9 beta", "► Clicker 0.8 (2026-06-30)"}
	if len(res.Items) != len(want) {
		t.Fatalf("%+v", res.Items)
	}
	for i, w := range want {
		if res.Items[i].Title != w {
			t.Errorf("item %d: %q, want %q", i, res.Items[i].Title, w)
		}
	}
	// Two entries share the release-notes link: both are kept.
	if res.Items[2].URL != res.Items[3].URL || res.Items[2].ID == res.Items[3].ID {
		t.Errorf("entries sharing a link: %+v / %+v", res.Items[2], res.Items[3])
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		ctype, body, want string
	}{
		{"text/html", "\ufeff\n  <?xml version=\"1.0\"?><rss version=\"2.0\">", KindRSS},
		{"", "<?xml version='1.0'?>\n<feed xmlns='http://www.w3.org/2005/Atom'>", KindRSS},
		{"", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">`, KindRSS},
		{"application/json", `{"version":"https://jsonfeed.org/version/1.1","items":[]}`, KindRSS},
		{"text/plain", "BEGIN:VCALENDAR\r\nVERSION:2.0", KindICal},
		{"", `[{"id":1}]`, KindJSON},
		{"", `{"data":[]}`, KindJSON},
		{"", "<!DOCTYPE html><html><body>", KindHTML},
		{"text/calendar", "garbage", KindICal},
		{"application/atom+xml", "garbage", KindRSS},
		{"text/html; charset=utf-8", "garbage", KindHTML},
		{"application/octet-stream", "garbage", ""},
	}
	for _, tt := range tests {
		if got := Detect(tt.ctype, []byte(tt.body)); got != tt.want {
			t.Errorf("Detect(%q, %q) = %q, want %q", tt.ctype, tt.body, got, tt.want)
		}
	}
}

func TestBillionLaughsIsHarmless(t *testing.T) {
	const laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title><item><title>&lol9;</title><guid>x</guid><description>&lol9;</description></item></channel></rss>`
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(laughs))
	}))
	var (
		res watch.Result
		err error
	)
	n := allocated(func() {
		res, err = fetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL}, Options{}))
	})
	if err != nil {
		wantClass(t, err, watch.Schema)
	}
	for _, it := range res.Items {
		if len(it.Title) > 1000 {
			t.Fatalf("entities expanded: title of %d bytes", len(it.Title))
		}
	}
	if n > 16<<20 {
		t.Fatalf("allocated %d MiB for a 1 KiB document", n>>20)
	}
}

func TestTooManyItems(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel>`)
	for i := range 30 {
		fmt.Fprintf(&b, "<item><title>%d</title><guid>%d</guid></item>", i, i)
	}
	b.WriteString(`</channel></rss>`)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(b.String()))
	}))
	_, err := fetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{MaxItems: 20}))
	wantClass(t, err, watch.TooLarge)
}

func TestGarbageBodiesAreSchema(t *testing.T) {
	for _, kind := range []string{KindRSS, KindICal, KindJSON} {
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html><body>Please log in</body></html>"))
		}))
		_, err := fetch(t, newTestSource(t, watch.Spec{Kind: kind, URL: srv.URL}, Options{}))
		wantClass(t, err, watch.Schema)
	}
}
