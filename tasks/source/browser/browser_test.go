package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/source/browser/browsertest"
	"github.com/herald-bridge/herald/tasks/source/portaltest"
	"github.com/herald-bridge/herald/tasks/watch"
)

func jsSpec(p *portaltest.Portal) watch.Spec {
	return watch.Spec{Kind: source.KindHTML, URL: p.URL + "/portal/js/notices", Selector: "li.notice", Render: watch.RenderBrowser}
}

func TestRender_ListBuiltByJavaScriptYieldsItsItems(t *testing.T) {
	pool := browsertest.Browser(t, browser.Options{})
	p := portaltest.New("选课通知", "考试安排", "放假通知")
	defer p.Close()
	s, err := source.New(jsSpec(p), source.Options{AllowPrivate: true, Browser: pool})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := s.Fetch(context.Background(), watch.Conditional{})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, it := range res.Items {
		titles = append(titles, it.Title)
	}
	if !slices.Equal(titles, []string{"选课通知", "考试安排", "放假通知"}) || !strings.HasPrefix(res.Items[0].URL, p.URL+"/portal/n/") {
		t.Fatalf("items = %+v", res.Items)
	}
	t.Logf("one page rendered in %s; peak resident memory of its browser %d MiB", took.Round(time.Millisecond), pool.PeakMemory()>>20)

	// The same page read as served lists nothing, and says nothing is
	// blocked: its list is built by the script.
	plain := jsSpec(p)
	plain.Render = ""
	s, err = source.New(plain, source.Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Fetch(context.Background(), watch.Conditional{}); err != nil || len(res.Items) != 0 {
		t.Fatalf("unrendered: %d items, %v", len(res.Items), err)
	}
}

func TestRender_PageRequestsOutsideTheGuardOrScopeAreBlockedAndListed(t *testing.T) {
	pool := browsertest.Browser(t, browser.Options{})
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the page reached a host outside the scope: %s", r.URL)
	}))
	defer other.Close()
	p := portaltest.New("选课通知")
	defer p.Close()
	p.Extra = []string{"http://169.254.169.254/latest/meta-data/iam", other.URL + "/track?id=1", "file:///etc/passwd"}
	// A frame outside the scope is refused too, and the page still reads.
	p.Frames = []string{"http://frames.example.net:8080/ad"}
	for _, c := range []struct {
		name string
		o    source.Options
		want []string
	}{
		// Private networks allowed: metadata stays refused, and a host
		// outside the scope is refused by the scope.
		{"private allowed", source.Options{AllowPrivate: true},
			[]string{"169.254.169.254: 169.254.169.254 is a cloud metadata address", other.URL + ": outside the task's scope",
				"http://frames.example.net:8080: outside the task's scope"}},
		// Only the portal's exact address is trusted: every other private
		// address is refused by the guard, as for herald's own fetches.
		{"portal trusted", source.Options{Trusted: []netip.AddrPort{netip.MustParseAddrPort(p.Listener.Addr().String())}},
			[]string{"169.254.169.254: 169.254.169.254 is a link-local address", other.URL + ": 127.0.0.1 is a loopback address"}},
	} {
		c.o.Browser = pool
		s, err := source.New(jsSpec(p), c.o)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Fetch(context.Background(), watch.Conditional{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(res.Items) != 1 {
			t.Fatalf("%s: items = %+v", c.name, res.Items)
		}
		joined := strings.Join(res.Blocked, "\n")
		for _, want := range c.want {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: blocked = %q, want a line with %q", c.name, res.Blocked, want)
			}
		}
		if strings.Contains(joined, "/track") || strings.Contains(joined, "meta-data") {
			t.Errorf("blocked lines carry paths: %q", res.Blocked)
		}
	}

	// Without trust, the page itself is on loopback: refused, the run fails.
	s, err := source.New(jsSpec(p), source.Options{Browser: pool})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background(), watch.Conditional{})
	if c := watch.ClassOf(err); c != watch.BlockedAddress {
		t.Fatalf("a page on loopback without policy: %v (%s), want blocked_address", err, c)
	}
}

func TestRender_WithoutABrowserTheWatchFailsAndIsNeverReadUnrendered(t *testing.T) {
	if _, err := browser.Find("/nonexistent/chromium"); err == nil || !strings.Contains(err.Error(), "browser.path") {
		t.Fatalf("Find = %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := browser.New(browser.Options{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "install chromium") {
		t.Fatalf("New without chromium on PATH = %v", err)
	}
	p := portaltest.New("选课通知")
	defer p.Close()
	s, err := source.New(jsSpec(p), source.Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(context.Background(), watch.Conditional{}); err == nil || !strings.Contains(err.Error(), "no browser") {
		t.Fatalf("render without a browser: %v", err)
	}
}

func TestRender_PageTimeBoundEndsAHangingPage(t *testing.T) {
	pool := browsertest.Browser(t, browser.Options{Timeout: 3 * time.Second})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			fmt.Fprint(w, `<html><body><ul></ul><script>fetch("/slow")</script></body></html>`)
			return
		}
		<-r.Context().Done()
	}))
	defer hang.Close()
	s, err := source.New(watch.Spec{Kind: source.KindHTML, URL: hang.URL + "/", Selector: "li", Render: watch.RenderBrowser},
		source.Options{AllowPrivate: true, Browser: pool})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(context.Background(), watch.Conditional{}); err == nil || !strings.Contains(err.Error(), "did not settle") {
		t.Fatalf("hanging page: %v", err)
	}
}

func TestSweep_KillsTheBrowserAKilledHeraldLeftBehind(t *testing.T) {
	path, err := browser.Find("")
	if err != nil {
		t.Skip(err)
	}
	dir := filepath.Join(t.TempDir(), "browser")
	left := filepath.Join(dir, "page-left")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	// A browser of its own session, as one whose herald died stays.
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+left, "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for len(browser.Leftovers(dir)) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(browser.Leftovers(dir)) == 0 {
		t.Fatal("the browser did not start")
	}
	browsertest.Browser(t, browser.Options{Dir: dir})
	if n := len(browser.Leftovers(dir)); n != 0 {
		t.Fatalf("%d processes left after start", n)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("the left profile directory is still there: %v", err)
	}
}

func TestRender_PageOverTheMemoryBoundFailsTooLarge(t *testing.T) {
	// A browser takes about 200 MiB to show anything: 64 MiB is too little.
	pool := browsertest.Browser(t, browser.Options{MemoryMB: 64})
	p := portaltest.New("选课通知")
	defer p.Close()
	s, err := source.New(jsSpec(p), source.Options{AllowPrivate: true, Browser: pool})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Fetch(context.Background(), watch.Conditional{})
	if c := watch.ClassOf(err); c != watch.TooLarge || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("a page over the memory bound: %v (%s), want too_large", err, c)
	}
}
