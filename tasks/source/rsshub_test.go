package source

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source/rsshubtest"
	"github.com/herald-bridge/herald/tasks/watch"
)

const jwc = "/ustc/jwc/info"

var jwcItems = []rsshubtest.Item{
	{Title: "关于2027年寒假放假安排的通知", Link: "https://www.teach.ustc.edu.cn/notice/1.html", PubDate: "Sun, 06 Dec 2026 08:00:00 GMT"},
	{Title: "选课系统维护公告", Link: "https://www.teach.ustc.edu.cn/notice/2.html", PubDate: "Sat, 05 Dec 2026 08:00:00 GMT"},
	// Some routes link to the instance itself: the identity must not.
	{Title: "本地条目", Link: jwc + "#local", Description: "on the instance"},
}

func instanceOf(t *testing.T, in *rsshubtest.Instance, key string) Instance {
	t.Helper()
	u, err := url.Parse(in.URL)
	if err != nil {
		t.Fatal(err)
	}
	return Instance{URL: u, Key: key}
}

func rsshubSource(t *testing.T, o Options, insts ...Instance) *Source {
	t.Helper()
	o.Instances = insts
	return newTestSource(t, watch.Spec{Kind: KindRSSHub, URL: insts[0].URL.String() + jwc, Route: jwc}, o)
}

func TestRSSHub_FailoverOn503(t *testing.T) {
	cases := []struct {
		name string
		fail func(a *rsshubtest.Instance)
	}{
		{"503", func(a *rsshubtest.Instance) { a.Down(http.StatusServiceUnavailable) }},
		{"500", func(a *rsshubtest.Instance) { a.Down(http.StatusInternalServerError) }},
		{"429", func(a *rsshubtest.Instance) { a.Down(http.StatusTooManyRequests) }},
		{"connection refused", func(a *rsshubtest.Instance) { a.Close() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := rsshubtest.New(t, ""), rsshubtest.New(t, "")
			a.Route(jwc, jwcItems...)
			b.Route(jwc, jwcItems...)
			c.fail(a)
			res := mustFetch(t, rsshubSource(t, Options{}, instanceOf(t, a, ""), instanceOf(t, b, "")))
			if len(res.Items) != len(jwcItems) || res.Kind != KindRSSHub {
				t.Fatalf("items = %d kind %q, want %d from the second instance", len(res.Items), res.Kind, len(jwcItems))
			}
			if b.Hits(jwc) != 1 {
				t.Fatalf("second instance asked %d times, want 1", b.Hits(jwc))
			}
		})
	}
}

func TestRSSHub_FailoverOnTimeout(t *testing.T) {
	hang := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	b := rsshubtest.New(t, "")
	b.Route(jwc, jwcItems...)
	hu, _ := url.Parse(hang.URL)
	s := rsshubSource(t, Options{Timeout: 300 * time.Millisecond}, Instance{URL: hu}, instanceOf(t, b, ""))
	res := mustFetch(t, s)
	if len(res.Items) != len(jwcItems) || b.Hits(jwc) != 1 {
		t.Fatalf("items = %d, second instance hits %d: want the second instance to answer", len(res.Items), b.Hits(jwc))
	}
}

func TestRSSHub_NoFailoverOn404(t *testing.T) {
	a, b := rsshubtest.New(t, ""), rsshubtest.New(t, "")
	b.Route(jwc, jwcItems...) // a does not know the route
	_, err := fetch(t, rsshubSource(t, Options{}, instanceOf(t, a, ""), instanceOf(t, b, "")))
	wantClass(t, err, watch.NotFound)
	if b.Hits(jwc) != 0 {
		t.Fatalf("a 404 moved on to the next instance (%d requests): it is the route's fault", b.Hits(jwc))
	}
}

func TestRSSHub_StaysOnFirstThatAnswers(t *testing.T) {
	a, b := rsshubtest.New(t, ""), rsshubtest.New(t, "")
	a.Route(jwc, jwcItems...)
	b.Route(jwc, jwcItems...)
	mustFetch(t, rsshubSource(t, Options{}, instanceOf(t, a, ""), instanceOf(t, b, "")))
	if a.Hits(jwc) != 1 || b.Hits(jwc) != 0 {
		t.Fatalf("hits a=%d b=%d, want 1 and 0", a.Hits(jwc), b.Hits(jwc))
	}
}

func TestRSSHub_AllInstancesDownIsTransient(t *testing.T) {
	a, b := rsshubtest.New(t, ""), rsshubtest.New(t, "")
	a.Down(http.StatusServiceUnavailable)
	b.Down(http.StatusBadGateway)
	_, err := fetch(t, rsshubSource(t, Options{}, instanceOf(t, a, ""), instanceOf(t, b, "")))
	wantClass(t, err, watch.Transient)
}

// An instance move changes neither identities nor digests, so the
// snapshot sees no news (SPEC §18).
func TestRSSHub_IdentityIndependentOfInstance(t *testing.T) {
	a, b := rsshubtest.New(t, ""), rsshubtest.New(t, "")
	a.Route(jwc, jwcItems...)
	b.Route(jwc, jwcItems...)
	ia, ib := instanceOf(t, a, ""), instanceOf(t, b, "")
	fromA := mustFetch(t, rsshubSource(t, Options{}, ia, ib)).Items
	a.Down(http.StatusServiceUnavailable)
	fromB := mustFetch(t, rsshubSource(t, Options{}, ia, ib)).Items
	if len(fromA) != len(fromB) {
		t.Fatalf("%d items from a, %d from b", len(fromA), len(fromB))
	}
	for i := range fromA {
		if fromA[i].ID != fromB[i].ID || fromA[i].Digest != fromB[i].Digest {
			t.Errorf("item %d: a %q/%s, b %q/%s: identity depends on the instance", i, fromA[i].ID, fromA[i].Digest, fromB[i].ID, fromB[i].Digest)
		}
		if strings.Contains(fromA[i].ID, a.URL) || strings.Contains(strings.Join(fromA[i].Alt, " "), a.URL) {
			t.Errorf("item %d identity %q names the instance", i, fromA[i].ID)
		}
	}
	if !strings.HasPrefix(fromB[2].URL, b.URL) {
		t.Errorf("the link shown is %q, want the answering instance's", fromB[2].URL)
	}
}

// I10: the access key goes to the instance as ?key= and into no error.
func TestI10_RSSHubKeySentNeverShown(t *testing.T) {
	const key = "s3cret-access-key"
	a := rsshubtest.New(t, key)
	a.Route(jwc, jwcItems...)
	mustFetch(t, rsshubSource(t, Options{}, instanceOf(t, a, key)))
	if k := a.Keys(); len(k) != 1 || k[0] != key {
		t.Fatalf("keys sent = %q, want the access key once", k)
	}
	a.Down(http.StatusServiceUnavailable)
	b := rsshubtest.New(t, key)
	b.Route(jwc, jwcItems...)
	_, err := fetch(t, rsshubSource(t, Options{}, instanceOf(t, a, key), instanceOf(t, b, "wrong-"+key)))
	if err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("err = %v: want a failure that does not carry the key", err)
	}
	wantClass(t, err, watch.Permission)
}

func TestRSSHub_RouteChecked(t *testing.T) {
	for _, r := range []string{"", "ustc/jwc", "/", "//evil.example/x", "/a/../b", "/a b", "rsshub:"} {
		if _, err := CleanRoute(r); err == nil {
			t.Errorf("CleanRoute(%q) accepted", r)
		}
	}
	for in, want := range map[string]string{"/ustc/jwc/info": "/ustc/jwc/info", "rsshub:/github/issue/a/b?limit=5": "/github/issue/a/b?limit=5", "RSSHub:/x": "/x"} {
		if got, err := CleanRoute(in); err != nil || got != want {
			t.Errorf("CleanRoute(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, c := range []struct{ base, route, want string }{
		{"https://rsshub.example.org", "/ustc/jwc/info", "https://rsshub.example.org/ustc/jwc/info"},
		{"https://example.org/rsshub/", "/github/issue/a/b?limit=5", "https://example.org/rsshub/github/issue/a/b?limit=5"},
		{"http://127.0.0.1:1200", "/twitter/user/%E4%B8%AD", "http://127.0.0.1:1200/twitter/user/%E4%B8%AD"},
		{"http://127.0.0.1:1200", "/bilibili/user/中文", "http://127.0.0.1:1200/bilibili/user/%E4%B8%AD%E6%96%87"},
	} {
		b, _ := url.Parse(c.base)
		if got := RouteURL(b, c.route).String(); got != c.want {
			t.Errorf("RouteURL(%s, %s) = %s, want %s", c.base, c.route, got, c.want)
		}
	}
	a := rsshubtest.New(t, "")
	_, err := New(watch.Spec{Kind: KindRSSHub, URL: a.URL + "/x", Route: "x"}, Options{Instances: []Instance{instanceOf(t, a, "")}})
	if err == nil {
		t.Fatal("New accepted an rsshub watch with a bad route")
	}
}

// An rsshub watch reports its route's feed title, as a feed does, so an
// unnamed task's notices name the feed rather than an instance's host.
func TestRSSHub_ReportsTheFeedsOwnTitle(t *testing.T) {
	a := rsshubtest.New(t, "")
	a.Route(jwc, jwcItems...)
	if got := mustFetch(t, rsshubSource(t, Options{}, instanceOf(t, a, ""))).Title; got != jwc {
		t.Errorf("title %q, want the feed's own %q", got, jwc)
	}
}
