package source

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html/charset"

	"github.com/herald-bridge/herald/tasks/watch"
)

// MaxFeeds bounds the feeds one page's discovery offers.
const MaxFeeds = 8

// Trial is what one fetch of a source found when it was requested, before
// any task exists (docs/chat.md, What a request is told).
type Trial struct {
	// Result is what a run would read; Items is empty when it failed.
	Result watch.Result
	// Page: the document is an HTML page.
	Page bool
	// Feeds are the feeds the page advertises (<link rel="alternate">).
	Feeds []Feed
}

// Feed is a feed a page advertises, or an RSSHub route offered for it
// (URL "rsshub:/…").
type Feed struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Try fetches the source once, as a run would, and also reports the feeds
// an HTML page advertises. The error is the run's would-be failure; Feeds
// are filled even when the page itself cannot be read as a list.
func (s *Source) Try(ctx context.Context) (Trial, error) {
	if s.kind != nil && s.kind.Run != nil {
		res, err := s.run(ctx, *s.kind)
		return Trial{Result: res}, err
	}
	doc, err := s.fetch(ctx, watch.Conditional{})
	if err != nil {
		return Trial{}, err
	}
	var tr Trial
	if Detect(doc.contentType, doc.body) == KindHTML {
		tr.Page = true
		tr.Feeds = Discover(doc.body, doc.contentType, doc.url)
	}
	tr.Result, err = s.read(doc)
	return tr, err
}

// feedTypes are the media types of feeds a page advertises (RSS
// Autodiscovery, and the Atom and JSON Feed variants readers accept).
var feedTypes = map[string]bool{
	"application/rss+xml": true, "application/atom+xml": true, "application/feed+json": true,
	"application/json": true, "application/rdf+xml": true,
}

// Discover lists the feeds an HTML page advertises with <link
// rel="alternate" type="…">, in page order, without repeats: each href
// resolved against the page's <base href> (itself resolved against page),
// http(s) only. A JSON link into a WordPress REST API (wp-json) is an API,
// not a feed, and is left out.
func Discover(body []byte, contentType string, page *url.URL) []Feed {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return nil
	}
	doc, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return nil
	}
	base := page
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b, err := page.Parse(strings.TrimSpace(href)); err == nil {
			base = b
		}
	}
	var out []Feed
	seen := map[string]bool{}
	doc.Find("link[rel][href]").EachWithBreak(func(_ int, l *goquery.Selection) bool {
		rel, _ := l.Attr("rel")
		typ, _ := l.Attr("type")
		href, _ := l.Attr("href")
		typ = strings.ToLower(strings.TrimSpace(strings.Split(typ, ";")[0]))
		if !hasToken(rel, "alternate") || !feedTypes[typ] || strings.Contains(typ, "json") && strings.Contains(href, "wp-json") {
			return true
		}
		u := resolve(base, href)
		if u == "" || seen[u] {
			return true
		}
		seen[u] = true
		title, _ := l.Attr("title")
		out = append(out, Feed{Title: normSpace(title), URL: u})
		return len(out) < MaxFeeds
	})
	return out
}

// hasToken reports whether the space-separated list has tok, in any case.
func hasToken(list, tok string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// ErrNotTried: a request's source was not tried (an RSSHub route with no
// instance configured; the request's own refusal says so).
var ErrNotTried = errors.New("source not tried")

// TryRequest tries the source a request names with the options its runs
// would have (o). An rsshub watch without a URL is placed on its first
// instance. When the source is an HTML page that advertises no feed and
// radar names RSSHub instances, the first instance's Radar rules that
// match the page are offered as its feeds (fetched with radar's options).
func TryRequest(ctx context.Context, spec watch.Spec, o, radar Options) (Trial, error) {
	if spec.Kind == KindRSSHub && spec.URL == "" {
		route, err := CleanRoute(spec.Route)
		if err != nil || len(o.Instances) == 0 {
			return Trial{}, ErrNotTried
		}
		spec.Route, spec.URL = route, RouteURL(o.Instances[0].URL, route).String()
	}
	s, err := New(spec, o)
	if err != nil {
		return Trial{}, ErrNotTried // the request's own checks word it
	}
	tr, err := s.Try(ctx)
	if tr.Page && len(tr.Feeds) == 0 && len(radar.Instances) > 0 && spec.Kind == "" {
		if rules, rerr := FetchRadar(ctx, radar.Instances[0], radar); rerr == nil {
			tr.Feeds = MatchRadar(rules, s.u)
		}
	}
	return tr, err
}
