package source

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-bridge/herald/tasks/watch"
)

// serveBody answers every request with body as contentType.
func serveBody(t *testing.T, contentType, body string) string {
	t.Helper()
	return newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write([]byte(body))
	})).URL
}

func TestSummary_EveryKindCarriesPlainText(t *testing.T) {
	long := strings.Repeat("考试时间调整，请留意。", 60)
	cases := []struct {
		name, contentType, body string
		spec                    watch.Spec
		want                    string // the first item's summary, "" to check only its bound
		wantLines               []string
		wantTitle               string
	}{
		{
			name: "rss description, markup stripped and entities decoded", contentType: "application/rss+xml",
			body: `<?xml version="1.0"?><rss version="2.0"><channel><title>Campus &amp; News</title><item><guid>a</guid><title>Exam moved</title>` +
				`<description>&lt;p&gt;The exam moves to &lt;b&gt;Friday&lt;/b&gt; &amp;amp; room 204.&lt;/p&gt;</description></item></channel></rss>`,
			spec: watch.Spec{Kind: KindRSS}, want: "The exam moves to Friday & room 204.", wantTitle: "Campus & News",
		},
		{
			name: "atom content, cut at 280 characters", contentType: "application/atom+xml",
			body: `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>系里通知</title><entry><id>b</id><title>通知</title>` +
				`<content type="html">&lt;p&gt;` + long + `&lt;/p&gt;</content></entry></feed>`,
			spec: watch.Spec{Kind: KindRSS}, wantTitle: "系里通知",
		},
		{
			name: "calendar description", contentType: "text/calendar",
			body: "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:e1\r\nDTSTART:20261201T090000Z\r\nSUMMARY:Final exam\r\n" +
				"DESCRIPTION:Bring your ID\\, a pen\\nand a calculator.\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
			spec: watch.Spec{Kind: KindICal}, want: "Bring your ID, a pen and a calculator.",
		},
		{
			name: "page item text and lines", contentType: "text/html",
			body: `<html><body><ul class="n"><li><h3>Exam</h3><p>Room 204</p>Monday<br>9:00 &amp; 14:00</li></ul></body></html>`,
			spec: watch.Spec{Kind: KindHTML, Selector: "ul.n > li"}, want: "Room 204 Monday 9:00 & 14:00",
			wantLines: []string{"Exam", "Room 204", "Monday", "9:00 & 14:00"},
		},
		{
			name: "json text field and lines", contentType: "application/json",
			body: `[{"id":1,"title":"v1.2","html_url":"https://example.com/r/1","body":"Fixes:\n- a crash\n- a leak"}]`,
			spec: watch.Spec{Kind: KindJSON}, want: "Fixes: - a crash - a leak",
			wantLines: []string{"title: v1.2", "url: https://example.com/r/1", "Fixes:", "- a crash", "- a leak"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.URL = serveBody(t, c.contentType, c.body)
			res := mustFetch(t, newTestSource(t, c.spec, Options{}))
			if len(res.Items) == 0 {
				t.Fatal("no items")
			}
			it := res.Items[0]
			if c.want != "" && it.Summary != c.want {
				t.Errorf("summary = %q, want %q", it.Summary, c.want)
			}
			if n := utf8.RuneCountInString(it.Summary); n == 0 || n > watch.SummaryMax || !utf8.ValidString(it.Summary) {
				t.Errorf("summary of %d characters (valid %v)", n, utf8.ValidString(it.Summary))
			}
			if c.wantLines != nil && !slices.Equal(it.Lines, c.wantLines) {
				t.Errorf("lines = %q, want %q", it.Lines, c.wantLines)
			}
			if res.Title != c.wantTitle {
				t.Errorf("source title = %q, want %q", res.Title, c.wantTitle)
			}
		})
	}
}

// A feed's own title names a task that has no name: RSS, RDF, Atom (text,
// html, xhtml) and JSON Feed; a title that comes only after the first
// item is not looked for.
func TestFeedTitle_EachFeedForm(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"rss", `<rss version="2.0"><channel><title>Campus &amp; News</title><item><title>x</title></item></channel></rss>`, "Campus & News"},
		{"rdf", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel><title>教务处</title></channel></rdf:RDF>`, "教务处"},
		{"atom html", `<feed xmlns="http://www.w3.org/2005/Atom"><title type="html">Dept &lt;b&gt;news&lt;/b&gt;</title></feed>`, "Dept news"},
		{"atom xhtml", `<feed xmlns="http://www.w3.org/2005/Atom"><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">Lab <em>log</em></div></title></feed>`, "Lab log"},
		{"atom text keeps brackets", `<feed xmlns="http://www.w3.org/2005/Atom"><title>Vector&lt;T&gt; notes</title></feed>`, "Vector<T> notes"},
		{"json feed", `{"version":"https://jsonfeed.org/version/1.1","title":" Release\nnotes ","items":[]}`, "Release notes"},
		{"item title only", `<rss version="2.0"><channel><item><title>x</title></item><title>late</title></channel></rss>`, ""},
	} {
		if got := feedTitle([]byte(c.body), ""); got != c.want {
			t.Errorf("%s: feedTitle = %q, want %q", c.name, got, c.want)
		}
	}
}
