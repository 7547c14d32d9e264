package source

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"

	"github.com/herald-bridge/herald/tasks/watch"
)

// feedDocs builds one small document per feed format with the given
// item titles (raw, inserted as written) and an optional XML declaration.
func feedDocs(decl string, titles ...string) map[string]string {
	var rss2, rss091, rdf, atom strings.Builder
	for i, t := range titles {
		n := string(rune('a' + i))
		rss2.WriteString("<item><title>" + t + "</title><link>https://news.example.org/" + n + "</link><guid>g-" + n + "</guid></item>")
		rss091.WriteString("<item><title>" + t + "</title><link>https://news.example.org/" + n + "</link></item>")
		rdf.WriteString(`<item rdf:about="https://news.example.org/` + n + `"><title>` + t + "</title><link>https://news.example.org/" + n + "</link></item>")
		atom.WriteString("<entry><id>urn:x:" + n + "</id><title>" + t + `</title><link href="https://news.example.org/` + n + `"/><updated>2026-11-30T10:00:00Z</updated></entry>`)
	}
	return map[string]string{
		"rss2":   decl + `<rss version="2.0"><channel><title>News</title><link>https://news.example.org/</link>` + rss2.String() + "</channel></rss>",
		"rss091": decl + `<rss version="0.91"><channel><title>News</title><link>https://news.example.org/</link><description>d</description>` + rss091.String() + "</channel></rss>",
		"rdf": decl + `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">` +
			`<channel rdf:about="https://news.example.org/"><title>News</title><link>https://news.example.org/</link></channel>` + rdf.String() + "</rdf:RDF>",
		"atom": decl + `<feed xmlns="http://www.w3.org/2005/Atom"><id>urn:x</id><title>News</title><updated>2026-11-30T10:00:00Z</updated>` + atom.String() + "</feed>",
	}
}

func serveBytes(t *testing.T, body []byte, contentType string) *Source {
	t.Helper()
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	return newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + "/feed"}, Options{})
}

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The Content-Type's charset decides (RFC 7303); without one the BOM, then
// the XML declaration; bytes that fit none are read as Windows-1252.
func TestFeedCharset_HTTPCharsetThenBOMThenDeclaration(t *testing.T) {
	const title = "Café, naïve résumé"
	const jp = "お知らせ：休講"
	tests := []struct {
		name, ctype, decl, title string
		enc                      encoding.Encoding
	}{
		{"undeclared latin-1, charset in the header", "application/rss+xml; charset=ISO-8859-1", "", title, charmap.ISO8859_1},
		{"undeclared shift_jis, charset in the header", "text/xml; charset=Shift_JIS", "", jp, japanese.ShiftJIS},
		{"header utf-8 over a latin-1 declaration", "application/xml; charset=utf-8", `<?xml version="1.0" encoding="ISO-8859-1"?>`, title, unicode.UTF8},
		{"header wins over a wrong declaration", "text/xml; charset=windows-1252", `<?xml version="1.0" encoding="utf-8"?>`, title, charmap.Windows1252},
		{"declaration only", "text/xml", `<?xml version="1.0" encoding="Shift_JIS"?>`, jp, japanese.ShiftJIS},
		{"nothing declared, not utf-8", "text/xml", "", title, charmap.Windows1252},
		{"header says utf-8, bytes are latin-1 and declared", "text/xml; charset=utf-8", `<?xml version="1.0" encoding="iso-8859-1"?>`, title, charmap.ISO8859_1},
	}
	for _, tt := range tests {
		for format, doc := range feedDocs(tt.decl, tt.title, "Second") {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				res := mustFetch(t, serveBytes(t, encode(t, tt.enc, doc), tt.ctype))
				if len(res.Items) != 2 || res.Items[0].Title != tt.title {
					t.Fatalf("items %+v, want first titled %q", res.Items, tt.title)
				}
			})
		}
	}
}

// XML requires readers to accept UTF-16; UTF-32 with a BOM is as plain.
func TestFeedCharset_UTF16AndUTF32(t *testing.T) {
	const title = "Ünïcode — 统一码"
	tests := []struct {
		name string
		enc  encoding.Encoding
		decl string
	}{
		{"utf-16le bom", unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), `<?xml version="1.0" encoding="UTF-16"?>`},
		{"utf-16be bom", unicode.UTF16(unicode.BigEndian, unicode.UseBOM), `<?xml version="1.0" encoding="UTF-16"?>`},
		{"utf-16le no bom", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), `<?xml version="1.0" encoding="UTF-16"?>`},
		{"utf-32le bom", utf32.UTF32(utf32.LittleEndian, utf32.UseBOM), `<?xml version="1.0"?>`},
		{"utf-32be bom", utf32.UTF32(utf32.BigEndian, utf32.UseBOM), ""},
	}
	for _, tt := range tests {
		for format, doc := range feedDocs(tt.decl, title) {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				res := mustFetch(t, serveBytes(t, encode(t, tt.enc, doc), "application/xml"))
				if len(res.Items) != 1 || res.Items[0].Title != title {
					t.Fatalf("items %+v", res.Items)
				}
			})
		}
	}
	t.Run("jsonfeed utf-16 bom", func(t *testing.T) {
		doc := `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"1","title":"` + title + `","content_text":"x"}]}`
		res := mustFetch(t, serveBytes(t, encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), doc), "application/feed+json"))
		if len(res.Items) != 1 || res.Items[0].Title != title {
			t.Fatalf("items %+v", res.Items)
		}
	})
}

// TestI2_MalformedFeedIsAnErrorNotAnEmptyFeed: a document that does not
// parse to its end fails with a schema error naming what is wrong; it never
// reads as a feed with no (or fewer) items, which would push removals.
func TestI2_MalformedFeedIsAnErrorNotAnEmptyFeed(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"rss2 unclosed channel title", `<rss version="2.0"><channel><title>News<title><item><title>A</title><link>https://n.example/a</link></item></channel></rss>`, "closes <title>"},
		{"rss2 truncated", `<rss version="2.0"><channel><item><title>A</title></item><item><title>B</title>`, "truncated"},
		{"rss091 unclosed item title", `<rss version="0.91"><channel><title>N</title><item><title>A</item></channel></rss>`, "closes <title>"},
		{"rdf mismatched", `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel><title>N</title></channel><item><title>A</title></rdf:RDF>`, "closes <item>"},
		{"atom truncated", `<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><title>A</title></entry><entry><id>2</id>`, "truncated"},
		{"atom unclosed title", `<feed xmlns="http://www.w3.org/2005/Atom"><title>F<entry><id>1</id><title>A</title></entry></feed>`, "closes <title>"},
		{"jsonfeed truncated", `{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","title":"A"}`, "feed"},
		{"not xml", "just some text", "feed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := fetch(t, serveBytes(t, []byte(tt.body), "application/xml"))
			wantClass(t, err, watch.Schema)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
			if len(res.Items) != 0 {
				t.Fatalf("items %+v", res.Items)
			}
		})
	}
	// Raw HTML with void elements inside a description is forgiven.
	res := mustFetch(t, serveBytes(t, []byte(`<rss version="2.0"><channel><item><title>A</title><link>https://n.example/a</link><description><p>one<br>two<img src="/x.png"></p></description></item></channel></rss>`), "text/xml"))
	if len(res.Items) != 1 {
		t.Fatalf("items %+v", res.Items)
	}
}

// TestI2_RepeatedGUIDsStayDistinct: items sharing a guid (or Atom id, or
// JSON Feed id) are separate items; editing the third changes exactly it,
// and reordering the feed changes nothing.
func TestI2_RepeatedGUIDsStayDistinct(t *testing.T) {
	type entry struct{ link, title, body string }
	entries := []entry{
		{"https://blog.example.net/p/1", "One", "first"},
		{"https://blog.example.net/p/2", "Two", "second"},
		{"https://blog.example.net/p/3", "Three", "third"},
		{"", "Four", "fourth"},
	}
	formats := map[string]func([]entry) string{
		"rss2": func(es []entry) string {
			var b strings.Builder
			b.WriteString(`<rss version="2.0"><channel><title>B</title>`)
			for _, e := range es {
				b.WriteString("<item><guid isPermaLink=\"false\">same-guid</guid><title>" + e.title + "</title><link>" + e.link + "</link><description>" + e.body + "</description></item>")
			}
			return b.String() + "</channel></rss>"
		},
		"atom": func(es []entry) string {
			var b strings.Builder
			b.WriteString(`<feed xmlns="http://www.w3.org/2005/Atom"><id>urn:f</id><title>B</title><updated>2026-11-30T10:00:00Z</updated>`)
			for _, e := range es {
				b.WriteString("<entry><id>urn:same</id><title>" + e.title + "</title>")
				if e.link != "" {
					b.WriteString(`<link href="` + e.link + `"/>`)
				}
				b.WriteString("<updated>2026-11-30T10:00:00Z</updated><content>" + e.body + "</content></entry>")
			}
			return b.String() + "</feed>"
		},
		"jsonfeed": func(es []entry) string {
			var parts []string
			for _, e := range es {
				parts = append(parts, `{"id":"same","title":"`+e.title+`","url":"`+e.link+`","content_text":"`+e.body+`"}`)
			}
			return `{"version":"https://jsonfeed.org/version/1.1","title":"B","items":[` + strings.Join(parts, ",") + `]}`
		},
	}
	base, _ := url.Parse("https://blog.example.net/feed")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for name, build := range formats {
		t.Run(name, func(t *testing.T) {
			read := func(es []entry) []watch.Item {
				items, err := parseFeed([]byte(build(es)), "", base)
				if err != nil {
					t.Fatal(err)
				}
				return items
			}
			first := read(entries)
			checkItems(t, first, nil)
			if len(first) != 4 {
				t.Fatalf("%d items, want 4: %+v", len(first), first)
			}
			d1 := watch.Compute(nil, first, now, watch.Options{})
			edited := append([]entry(nil), entries...)
			edited[2].body = "third, corrected"
			d2 := watch.Compute(d1.Next, read(edited), now.Add(time.Hour), watch.Options{})
			if len(d2.Events) != 1 || d2.Events[0].Kind != watch.EventChanged || d2.Events[0].Item.Title != "Three" {
				t.Fatalf("edit of the third: events %+v", d2.Events)
			}
			reordered := []entry{entries[3], entries[1], entries[0], entries[2]}
			d3 := watch.Compute(d1.Next, read(reordered), now.Add(time.Hour), watch.Options{})
			if len(d3.Events) != 0 {
				t.Fatalf("reorder: events %+v", d3.Events)
			}
		})
	}
}

// Entities are decoded once; markup is stripped only from fields that are
// HTML (declared, or looking like it), so a plain title keeps its
// brackets.
func TestFeedTitles_LiteralAngleBracketsKept(t *testing.T) {
	want := []string{"Use the <video> element", "Vector<T>", "AT&T & friends", "Bold move"}
	raw := []string{"Use the &lt;video&gt; element", "Vector&lt;T&gt;", "AT&amp;T &amp; friends", "&lt;b&gt;Bold&lt;/b&gt; move"}
	for format, doc := range feedDocs("", raw...) {
		t.Run(format, func(t *testing.T) {
			items, err := parseFeed([]byte(doc), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(want) {
				t.Fatalf("%d items", len(items))
			}
			for i, w := range want {
				got := items[i].Title
				if format == "atom" && i == 3 {
					w = "<b>Bold</b> move" // type="text" (the default): the markup is the text
				}
				if got != w {
					t.Errorf("title %d: %q, want %q", i, got, w)
				}
			}
		})
	}
	t.Run("atom typed", func(t *testing.T) {
		doc := `<feed xmlns="http://www.w3.org/2005/Atom"><id>urn:f</id><title>F</title>` +
			`<entry><id>1</id><title type="html">&lt;b&gt;Bold&lt;/b&gt; &amp;lt;video&amp;gt;</title></entry>` +
			`<entry><id>2</id><title type="text">&lt;b&gt; is bold</title></entry>` +
			`<entry><id>3</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><em>Rain</em>, again</div></title></entry>` +
			`<entry><id>4</id><title>Naked <b>markup</b></title></entry></feed>`
		items, err := parseFeed([]byte(doc), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range []string{"Bold <video>", "<b> is bold", "Rain, again", "Naked markup"} {
			if items[i].Title != w {
				t.Errorf("title %d: %q, want %q", i, items[i].Title, w)
			}
		}
	})
	t.Run("jsonfeed", func(t *testing.T) {
		doc := `{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","title":"Vector<T> and <video>","content_html":"<p>x</p>"}]}`
		items, err := parseFeed([]byte(doc), "", nil)
		if err != nil || len(items) != 1 || items[0].Title != "Vector<T> and <video>" {
			t.Fatalf("%+v %v", items, err)
		}
	})
}

// An RSS item needs a title or a description, not both: description-only
// items (RSS 0.92 and 2.0 allow them) are kept, titled from the
// description.
func TestFeedItems_DescriptionOnlyItemsKept(t *testing.T) {
	docs := map[string]string{
		"rss2": `<rss version="2.0"><channel><title>Status</title>` +
			`<item><description>&lt;p&gt;Maintenance tonight from 22:00.&lt;/p&gt;</description></item>` +
			`<item><description>All systems normal again.</description><pubDate>Tue, 01 Dec 2026 09:00:00 GMT</pubDate></item>` +
			`</channel></rss>`,
		"rss092": `<rss version="0.92"><channel><title>Status</title><link>https://status.example.com/</link>` +
			`<item><description>Maintenance tonight from 22:00.</description></item>` +
			`<item><description>All systems normal again.</description></item></channel></rss>`,
		"jsonfeed": `{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"a","content_text":"Maintenance tonight from 22:00."},{"id":"b","content_html":"<p>All systems normal again.</p>"}]}`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			items, err := parseFeed([]byte(doc), "", nil)
			checkItems(t, items, err)
			if err != nil || len(items) != 2 {
				t.Fatalf("%d items, %v", len(items), err)
			}
			if items[0].Title != "Maintenance tonight from 22:00." || items[1].Title != "All systems normal again." {
				t.Fatalf("titles %q, %q", items[0].Title, items[1].Title)
			}
		})
	}
}
