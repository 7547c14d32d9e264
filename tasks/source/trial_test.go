package source

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/tasks/source/rsshubtest"
	"github.com/herald-bridge/herald/tasks/watch"
)

func TestDiscover_FeedsAPageAdvertises(t *testing.T) {
	page, _ := url.Parse("https://news.example.edu/dept/index.html")
	cases := []struct {
		name, html string
		want       []Feed
	}{
		{"relative href against the page", `<html><head><link rel="alternate" type="application/rss+xml" title="Notices" href="feed.xml"></head><body></body></html>`,
			[]Feed{{"Notices", "https://news.example.edu/dept/feed.xml"}}},
		{"base href wins", `<html><head><base href="/static/"><link rel="alternate" type="application/atom+xml" href="atom.xml"></head></html>`,
			[]Feed{{"", "https://news.example.edu/static/atom.xml"}}},
		{"every kind, once, in order", `<html><head>
<link rel="Alternate" type="application/RSS+XML" href="/rss">
<link rel="alternate" type="application/feed+json" title="JSON" href="/feed.json">
<link rel="alternate" type="application/rss+xml" href="https://news.example.edu/rss">
<link rel="alternate" type="application/json" href="/wp-json/wp/v2/posts">
<link rel="alternate" type="text/html" hreflang="zh" href="/zh/">
<link rel="stylesheet" type="application/rss+xml" href="/not-a-feed">
<link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
</head></html>`,
			[]Feed{{"", "https://news.example.edu/rss"}, {"JSON", "https://news.example.edu/feed.json"}}},
		{"none", `<html><head><title>x</title></head><body><a href="/feed.xml">feed</a></body></html>`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Discover([]byte(c.html), "text/html; charset=utf-8", page); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Discover = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestTry_ReportsItemsAndAdvertisedFeeds(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><html><head><link rel="alternate" type="application/rss+xml" href="/news/rss.xml"></head><body><p>Welcome</p></body></html>`))
	}))
	tr, err := newTestSource(t, watch.Spec{URL: srv.URL + "/news/"}, Options{}).Try(context.Background())
	if !tr.Page || len(tr.Feeds) != 1 || tr.Feeds[0].URL != srv.URL+"/news/rss.xml" {
		t.Fatalf("trial = %+v", tr)
	}
	wantClass(t, err, watch.Schema) // no repeated list: the page itself is no list
}

func TestMatchRadar(t *testing.T) {
	rules := []byte(`{
 "ustc.edu.cn": {"_name": "中国科学技术大学",
   "www.teach": [{"title": "教务处通知", "docs": "https://docs.rsshub.app/routes/university", "source": ["/:category"], "target": "/ustc/jwc/:category?"}],
   "www": [{"title": "新闻", "source": ["/2021/list.htm", "/news/*"], "target": "/ustc/news"},
           {"title": "needs id", "source": ["/item"], "target": "/ustc/item/:id"}]},
 "github.com": {"_name": "GitHub",
   ".": [{"title": "Issues", "source": ["github.com/:user/:repo/issues"], "target": "/github/issue/:user/:repo"},
         {"title": "function target", "source": ["/:user"], "target": {"fn": true}}]}
}`)
	cases := []struct {
		page string
		want []Feed
	}{
		{"https://www.teach.ustc.edu.cn/info", []Feed{{"中国科学技术大学 - 教务处通知", "rsshub:/ustc/jwc/info"}}},
		{"https://www.ustc.edu.cn/2021/list.htm", []Feed{{"中国科学技术大学 - 新闻", "rsshub:/ustc/news"}}},
		{"https://www.ustc.edu.cn/news/a/b", []Feed{{"中国科学技术大学 - 新闻", "rsshub:/ustc/news"}}},
		{"https://github.com/DIYgod/RSSHub/issues", []Feed{{"GitHub - Issues", "rsshub:/github/issue/DIYgod/RSSHub"}}},
		{"https://www.ustc.edu.cn/item", nil},
		{"https://example.org/info", nil},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.page)
		if got := MatchRadar(rules, u); !reflect.DeepEqual(got, c.want) {
			t.Errorf("MatchRadar(%s) = %+v, want %+v", c.page, got, c.want)
		}
	}
}

// Radar rules are read once per instance within RadarTTL.
func TestFetchRadar_KeptForAWhile(t *testing.T) {
	in := rsshubtest.New(t, "")
	in.Radar(map[string]any{"example.edu": map[string]any{"_name": "E"}})
	u, _ := url.Parse(in.URL)
	for range 3 {
		if b, err := FetchRadar(context.Background(), Instance{URL: u}, Options{AllowPrivate: true}); err != nil || !strings.Contains(string(b), "example.edu") {
			t.Fatalf("FetchRadar = %s, %v", b, err)
		}
	}
	if n := in.Hits(RadarPath); n != 1 {
		t.Fatalf("the rules were fetched %d times, want once", n)
	}
}
