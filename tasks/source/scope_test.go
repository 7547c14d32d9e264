package source

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI8_RedirectScopeIsSegmentwise: with an approved prefix of /feeds, a
// redirect to a sibling path that only shares the prefix as a string, or
// one that climbs out through encoded dot segments, is refused before it
// is followed; one under /feeds is followed.
func TestI8_RedirectScopeIsSegmentwise(t *testing.T) {
	reached := map[string]bool{}
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/feeds/sibling":
			http.Redirect(w, r, "/feeds-private/rss.xml", http.StatusFound)
		case "/feeds/climb":
			w.Header().Set("Location", "/feeds/%2e%2e/admin/rss.xml")
			w.WriteHeader(http.StatusFound)
		case "/feeds/moved":
			http.Redirect(w, r, "/feeds/new/rss.xml", http.StatusMovedPermanently)
		default:
			reached[r.URL.RawPath+"|"+r.URL.Path] = true
			_, _ = io.WriteString(w, smallRSS)
		}
	}))
	u, _ := url.Parse(srv.URL)
	scope := Within(u.Host, "/feeds")
	for _, path := range []string{"/feeds/sibling", "/feeds/climb"} {
		_, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + path}, Options{Scope: scope}))
		wantClass(t, err, watch.Scope)
	}
	if len(reached) != 0 {
		t.Fatalf("out-of-scope targets were requested: %v", reached)
	}
	mustFetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + "/feeds/moved"}, Options{Scope: scope}))
}
