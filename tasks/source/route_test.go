package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
	"github.com/herald-bridge/herald/tasks/watch"
)

const routeRSS = `<?xml version="1.0"?><rss version="2.0"><channel><title>Notices</title>
<item><title>Exam timetable</title><link>http://news.campus.test/1</link><guid>n-1</guid></item></channel></rss>`

// A source on a route fetches through its proxy (a name only the proxy
// knows, private networks not allowed); a proxy that refuses herald's
// credentials ends the run as auth, naming the proxy and not the
// password; a proxy that is down is transient (I6).
func TestRoute_SourceThroughItsProxy(t *testing.T) {
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write([]byte(routeRSS))
	}))
	defer feed.Close()
	const pw = "campus-pa55-word"
	hosts := map[string]string{"news.campus.test:80": strings.TrimPrefix(feed.URL, "http://")}
	proxy := proxytest.NewHTTP(t, hosts, "herald", pw)
	down := proxytest.NewHTTP(t, hosts, "", "")
	downURL := down.URL()
	down.Close()
	for _, tc := range []struct {
		name, proxy string
		class       watch.Class
	}{
		{"through the proxy", proxy.URL(), ""},
		{"wrong password", proxy.URLWith("herald", "not-"+pw), watch.Auth},
		{"proxy down", downURL, watch.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route, err := egress.NewRoute("campus", tc.proxy)
			if err != nil {
				t.Fatal(err)
			}
			src, err := New(watch.Spec{Kind: KindRSS, URL: "http://news.campus.test/feed.xml", Proxy: "campus"}, Options{Route: route})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := src.Fetch(ctx, watch.Conditional{})
			if tc.class == "" {
				if err != nil || len(res.Items) != 1 {
					t.Fatalf("got %d items, %v", len(res.Items), err)
				}
				return
			}
			if got := watch.ClassOf(err); got != tc.class {
				t.Fatalf("class %s (%v), want %s", got, err, tc.class)
			}
			if msg := err.Error(); !strings.Contains(msg, "proxy campus") || strings.Contains(msg, pw) {
				t.Fatalf("error %q: want the proxy's name and no password", msg)
			}
		})
	}
}
