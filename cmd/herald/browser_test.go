package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium over the DevTools protocol.
// One Chromium serves the whole test binary; each test gets a tab in a
// browser context of its own (its own cookies and storage). In CI
// (CI=true) a missing Chromium fails the tests; on a developer machine
// without it they skip.

// browserStep bounds one step of a browser test: a ceiling on a hang,
// not a duration any test measures.
const browserStep = 20 * time.Second

var chrome struct {
	once   sync.Once
	ctx    context.Context
	stop   func()
	dir    string
	err    error
	exists bool
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func startChromium(path string) {
	dir, err := os.MkdirTemp("", "herald-chromium-")
	if err != nil {
		chrome.err = err
		return
	}
	chrome.dir = dir
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1100, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	chrome.ctx = ctx
	chrome.stop = func() { cancel(); cancelAlloc() }
	chrome.exists = true
	chrome.err = chromedp.Do(ctx)
}

// stopChromium ends the shared browser (TestMain calls it).
func stopChromium() {
	if chrome.exists {
		chrome.stop()
	}
	if chrome.dir != "" {
		_ = os.RemoveAll(chrome.dir)
	}
}

// browserTab returns a fresh tab in a fresh browser context. When the test
// fails, the tab's screenshot is saved as a test artifact.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "" {
			t.Skip("chromium is not installed (apt-get install chromium); the browser tests run in CI")
		}
		t.Fatal("CI is set but chromium is not installed; .ci/run installs it")
	}
	chrome.once.Do(func() { startChromium(path) })
	if chrome.err != nil {
		t.Fatalf("start chromium: %v", chrome.err)
	}
	ctx, cancel := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			saveScreenshot(t, ctx, "failure")
		}
		cancel()
	})
	return ctx
}

// artifactDir is where screenshots go: $HERALD_TEST_ARTIFACTS, else a
// directory under the system's temp dir (never the repository).
func artifactDir() string {
	if d := os.Getenv("HERALD_TEST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "herald-test-artifacts")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// saveScreenshot writes the tab's full-page screenshot and logs its path.
func saveScreenshot(t *testing.T, tab context.Context, what string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	dir := artifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(t.Name(), "_")+"-"+what+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	t.Logf("screenshot saved: %s", path)
	return path
}

// open loads u in the tab as a new document (from about:blank, so a
// link that differs only after '#' still loads afresh).
func open(t *testing.T, tab context.Context, u string) {
	t.Helper()
	do(t, tab, chromedp.Navigate("about:blank"), chromedp.Navigate(u))
}

// showcase saves a screenshot of a passing step too when
// HERALD_TEST_SCREENSHOTS is set, for a person to look at the pages.
func showcase(t *testing.T, tab context.Context, what string) {
	t.Helper()
	if os.Getenv("HERALD_TEST_SCREENSHOTS") != "" {
		saveScreenshot(t, tab, what)
	}
}

// do runs browser steps, each bounded, failing the test on an error.
func do(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i, s := range steps {
		ctx, cancel := context.WithTimeout(tab, browserStep)
		_, err := chromedp.Run(ctx, s)
		cancel()
		if err != nil {
			t.Fatalf("browser step %d: %v", i+1, err)
		}
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is truthy in the tab. It
// asks again and again rather than waiting inside the page, so a
// navigation or a reload on the way does not end the wait.
func waitJS(t *testing.T, tab context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(browserStep)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tab, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	body, _ := chromedp.Run(tab, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	t.Fatalf("waiting for %s (last error: %v)\npage text:\n%s", what, lastErr, body)
}

// textOf is an element's visible text.
func textOf(t *testing.T, tab context.Context, css string) string {
	t.Helper()
	return eval[string](t, tab, "(document.querySelector("+jsString(css)+") || {innerText: ''}).innerText")
}

func jsString(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			b = append(b, '\\', byte(r))
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}
