package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/watch"
)

const smallRSS = `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://news.example.edu/</link>
<item><title>One</title><link>/one</link><guid>g1</guid></item>
<item><title>Two</title><link>/two</link><guid>g2</guid></item></channel></rss>`

func TestConditionalGET(t *testing.T) {
	var got []http.Header
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")
		_, _ = io.WriteString(w, smallRSS)
	}))
	s := newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + "/feed"}, Options{})
	first := mustFetch(t, s)
	if first.NotModified || len(first.Items) != 2 || first.Kind != KindRSS {
		t.Fatalf("first fetch: %+v", first)
	}
	if first.Validators.ETag != `"v1"` || first.Validators.LastModified == "" {
		t.Fatalf("validators %+v", first.Validators)
	}
	second, err := s.Fetch(context.Background(), first.Validators)
	if err != nil {
		t.Fatal(err)
	}
	if !second.NotModified || len(second.Items) != 0 || second.Validators != first.Validators {
		t.Fatalf("second fetch: %+v", second)
	}
	h := got[1]
	if h.Get("If-Modified-Since") != first.Validators.LastModified {
		t.Fatalf("If-Modified-Since %q", h.Get("If-Modified-Since"))
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "herald/") {
		t.Fatalf("User-Agent %q", h.Get("User-Agent"))
	}
}

func TestI6_StatusClasses(t *testing.T) {
	tests := []struct {
		status int
		class  watch.Class
	}{
		{401, watch.Auth},
		{403, watch.Permission},
		{404, watch.NotFound},
		{410, watch.NotFound},
		{408, watch.Transient},
		{429, watch.Transient},
		{500, watch.Transient},
		{502, watch.Transient},
		{503, watch.Transient},
		{400, watch.Schema},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
			}))
			_, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL}, Options{}))
			wantClass(t, err, tt.class)
			if tt.class.Retryable() != (tt.class == watch.Transient) {
				t.Fatal("retry policy disagrees")
			}
		})
	}
}

func TestTransportFailureClasses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	t.Run("connection refused", func(t *testing.T) {
		_, err := fetch(t, newTestSource(t, watch.Spec{URL: closed}, Options{}))
		wantClass(t, err, watch.Transient)
	})
	t.Run("timeout", func(t *testing.T) {
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		_, err := fetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{Timeout: 1}))
		wantClass(t, err, watch.Transient)
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, smallRSS)
		}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestSource(t, watch.Spec{URL: srv.URL}, Options{}).Fetch(ctx, watch.Conditional{})
		wantClass(t, err, watch.Cancelled)
	})
}

func TestI8_RedirectScope(t *testing.T) {
	other := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("credentials forwarded across hosts")
		}
		_, _ = io.WriteString(w, smallRSS)
	}))
	otherURL, _ := url.Parse(other.URL)
	hops := 0
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/feed", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/feed", http.StatusFound)
		case "/loop":
			hops++
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/feed":
			if r.Header.Get("Authorization") != "Bearer k" {
				t.Errorf("credentials not sent to the approved host")
			}
			_, _ = io.WriteString(w, smallRSS)
		}
	}))
	spec := func(path string) watch.Spec {
		return watch.Spec{Kind: KindRSS, URL: srv.URL + path, Headers: map[string]string{"Authorization": "Bearer k"}}
	}

	res := mustFetch(t, newTestSource(t, spec("/moved"), Options{}))
	if len(res.Items) != 2 || !strings.HasPrefix(res.Items[0].URL, srv.URL+"/one") {
		t.Fatalf("same-host redirect: %+v", res.Items)
	}

	// 127.0.0.1 and localhost are different hosts as far as scope goes.
	_, err := fetch(t, newTestSource(t, spec("/away"), Options{}))
	wantClass(t, err, watch.Scope)

	inScope := func(u *url.URL) bool { return u.Host == otherURL.Host }
	res = mustFetch(t, newTestSource(t, spec("/away"), Options{Scope: inScope}))
	if len(res.Items) != 2 || !strings.HasPrefix(res.Items[0].URL, other.URL) {
		t.Fatalf("scoped redirect: links %q not resolved against the final URL", res.Items[0].URL)
	}

	// A scope confines same-host redirects to the approved path prefix too.
	underFeeds := func(u *url.URL) bool { return strings.HasPrefix(u.Path, "/feeds/") }
	_, err = fetch(t, newTestSource(t, spec("/moved"), Options{Scope: underFeeds}))
	wantClass(t, err, watch.Scope)

	_, err = fetch(t, newTestSource(t, spec("/loop"), Options{}))
	wantClass(t, err, watch.Transient)
	if hops != MaxRedirects+1 {
		t.Fatalf("followed %d hops, want %d", hops, MaxRedirects+1)
	}
}

func TestBlockedAddresses(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusFound)
		case "/mapped":
			http.Redirect(w, r, "http://[::ffff:169.254.169.254]/", http.StatusFound)
		default:
			_, _ = io.WriteString(w, smallRSS)
		}
	}))
	u, _ := url.Parse(srv.URL)
	anywhere := func(*url.URL) bool { return true }
	strict := func(path string) *Source {
		s, err := New(watch.Spec{Kind: KindRSS, URL: srv.URL + path}, Options{Trusted: trusted(t, srv), Scope: anywhere})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The trusted test server itself is reachable…
	mustFetch(t, strict("/feed"))
	// …but a redirect from it to the metadata address is dialled through the guard.
	for _, p := range []string{"/metadata", "/mapped"} {
		_, err := fetch(t, strict(p))
		wantClass(t, err, watch.BlockedAddress)
		if !errors.Is(err, egress.ErrBlocked) {
			t.Fatalf("%s: %v does not wrap egress.ErrBlocked", p, err)
		}
	}
	// A host name resolving to 127.0.0.1 is refused without allow_private_networks.
	s, err := New(watch.Spec{URL: "http://localhost:" + u.Port() + "/feed"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetch(t, s)
	wantClass(t, err, watch.BlockedAddress)
	// And allowed with it.
	mustFetch(t, newTestSource(t, watch.Spec{URL: "http://localhost:" + u.Port() + "/feed"}, Options{}))
}

// allocBound is far below what reading the hostile bodies below in full
// would allocate (a 50 MiB body read through a growing buffer allocates
// over 120 MiB; the bomb inflates to 200 MiB), and comfortably above the
// cost of reading up to the 10 MiB cap, also under the race detector.
const allocBound = 100 << 20

func TestI7_BodyOver10MiBIsTooLarge(t *testing.T) {
	chunk := bytes.Repeat([]byte("<!-- padding padding padding -->\n"), 2048)
	written := make(chan int, 2)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		if r.URL.Path == "/announced" {
			w.Header().Set("Content-Length", fmt.Sprint(50<<20))
		}
		sent := 0
		defer func() { written <- sent }()
		for sent < 50<<20 {
			n, err := w.Write(chunk)
			sent += n
			if err != nil {
				return
			}
		}
	}))
	for _, path := range []string{"/streamed", "/announced"} {
		t.Run(path, func(t *testing.T) {
			var err error
			n := allocated(func() {
				_, err = fetch(t, newTestSource(t, watch.Spec{URL: srv.URL + path}, Options{}))
			})
			wantClass(t, err, watch.TooLarge)
			t.Logf("allocated %d MiB", n>>20)
			if n > allocBound {
				t.Fatalf("allocated %d MiB for a 50 MiB body", n>>20)
			}
			// The reader hung up near the cap: the server could not send it all.
			if sent := <-written; sent >= 50<<20 {
				t.Fatalf("server sent the whole %d MiB body", sent>>20)
			}
		})
	}
}

func TestI7_GzipBombIsTooLarge(t *testing.T) {
	// A gzip stream may hold many members; 200 copies of one that inflates
	// to 1 MiB make a 200 MiB bomb of a few hundred KiB.
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 200)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/rss+xml")
		_, _ = w.Write(bomb)
	}))
	var err error
	n := allocated(func() {
		_, err = fetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL}, Options{}))
	})
	wantClass(t, err, watch.TooLarge)
	t.Logf("allocated %d MiB", n>>20)
	if n > allocBound {
		t.Fatalf("allocated %d MiB decompressing a bomb", n>>20)
	}
}

func TestGzipAndDeflateBodies(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = io.WriteString(zw, smallRSS)
		_ = zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(buf.Bytes())
	}))
	res := mustFetch(t, newTestSource(t, watch.Spec{URL: srv.URL}, Options{}))
	if res.Kind != KindRSS || len(res.Items) != 2 {
		t.Fatalf("%+v", res)
	}
}

func TestAPIErrorInsideHTTP200(t *testing.T) {
	tests := []struct {
		name  string
		spec  watch.Spec
		body  string
		class watch.Class // "" = no error
		items int
	}{
		{"error string", watch.Spec{Kind: KindJSON}, `{"error":"not authenticated"}`, watch.Auth, 0},
		{"code 401", watch.Spec{Kind: KindJSON, Items: "data"}, `{"code":401,"msg":"invalid access token"}`, watch.Auth, 0},
		{"errors array", watch.Spec{Kind: KindJSON, Items: "data.items"}, `{"errors":[{"message":"Bad credentials"}]}`, watch.Auth, 0},
		{"github message", watch.Spec{Kind: KindJSON}, `{"message":"Requires authentication","documentation_url":"https://docs.github.com/rest"}`, watch.Auth, 0},
		{"canvas errors", watch.Spec{Kind: KindJSON}, `{"errors":[{"message":"user authorization required"}],"status":"unauthenticated"}`, watch.Auth, 0},
		{"forbidden object", watch.Spec{Kind: KindJSON}, `{"error":{"code":403,"message":"Resource not accessible by integration"}}`, watch.Permission, 0},
		{"rate limited", watch.Spec{Kind: KindJSON}, `{"message":"API rate limit exceeded"}`, watch.Transient, 0},
		{"auth error where a feed was expected", watch.Spec{Kind: KindRSS}, `{"error":"invalid_token"}`, watch.Auth, 0},
		{"auth error where a calendar was expected", watch.Spec{Kind: KindICal}, `{"message":"Unauthorized"}`, watch.Auth, 0},
		{"detected kind", watch.Spec{}, `{"error":"not authenticated"}`, watch.Auth, 0},
		{"success envelope", watch.Spec{Kind: KindJSON, Items: "data"}, `{"code":0,"msg":"ok","data":[{"id":1,"title":"a"}]}`, "", 1},
		{"empty list", watch.Spec{Kind: KindJSON, Items: "data"}, `{"code":0,"data":[]}`, "", 0},
		{"missing items path", watch.Spec{Kind: KindJSON, Items: "data"}, `{"total":3,"results":[]}`, watch.Schema, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			}))
			tt.spec.URL = srv.URL
			res, err := fetch(t, newTestSource(t, tt.spec, Options{}))
			if tt.class == "" {
				if err != nil || len(res.Items) != tt.items {
					t.Fatalf("err=%v items=%d, want %d items", err, len(res.Items), tt.items)
				}
				return
			}
			wantClass(t, err, tt.class)
		})
	}
}

// TestI10_ErrorsCarryNoSecrets: header values and URL paths/queries (calendar
// feed URLs embed access tokens) never appear in errors.
func TestI10_ErrorsCarryNoSecrets(t *testing.T) {
	const token, pathSecret, querySecret = "s3cr3t-bearer", "user_9f8e7d6c", "q-tok-1234"
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("mode") {
		case "401":
			w.WriteHeader(http.StatusUnauthorized)
		case "json":
			_, _ = io.WriteString(w, `{"error":"not authenticated"}`)
		case "garbage":
			_, _ = io.WriteString(w, "BEGIN:VCALENDAR\r\nnonsense")
		case "redirect":
			http.Redirect(w, r, "https://elsewhere.example/"+pathSecret, http.StatusFound)
		}
	}))
	for _, mode := range []string{"401", "json", "garbage", "redirect"} {
		spec := watch.Spec{Kind: KindICal, URL: srv.URL + "/feeds/calendars/" + pathSecret + ".ics?token=" + querySecret + "&mode=" + mode,
			Headers: map[string]string{"Authorization": "Bearer " + token}}
		_, err := fetch(t, newTestSource(t, spec, Options{}))
		if err == nil {
			t.Fatalf("%s: no error", mode)
		}
		for _, secret := range []string{token, pathSecret, querySecret} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("%s: error %q leaks %q", mode, err, secret)
			}
		}
	}
	// A malformed header names the header, never its value.
	_, err := New(watch.Spec{URL: "https://x.example/", Headers: map[string]string{"X-Key": token + "\r\nEvil: 1"}}, Options{})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("New: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		spec watch.Spec
		ok   bool
	}{
		{"rss", watch.Spec{Kind: KindRSS, URL: "https://news.example.edu/feed.xml"}, true},
		{"detect", watch.Spec{URL: "http://news.example.edu/feed"}, true},
		{"html", watch.Spec{Kind: KindHTML, URL: "https://dept.example.edu/notices", Selector: "ul.notices > li"}, true},
		{"json", watch.Spec{Kind: KindJSON, URL: "https://api.example.com/releases", Items: "data"}, true},
		{"ical", watch.Spec{Kind: KindICal, URL: "https://lms.example.edu/feeds/calendar.ics"}, true},
		{"unknown kind", watch.Spec{Kind: "atom", URL: "https://x.example/"}, false},
		{"html without selector", watch.Spec{Kind: KindHTML, URL: "https://x.example/"}, true},
		{"bad selector", watch.Spec{Kind: KindHTML, URL: "https://x.example/", Selector: "ul >> [["}, false},
		{"ftp", watch.Spec{URL: "ftp://x.example/feed"}, false},
		{"relative", watch.Spec{URL: "/feed.xml"}, false},
		{"no host", watch.Spec{URL: "https:///feed"}, false},
		{"userinfo", watch.Spec{URL: "https://u:p@x.example/feed"}, false},
		{"bad header name", watch.Spec{URL: "https://x.example/", Headers: map[string]string{"Bad Name": "v"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.spec, Options{})
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("%v is not ErrInvalidSpec", err)
			}
		})
	}
}
