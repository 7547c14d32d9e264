// Package browser renders the pages of html sources with render: browser
// in headless Chromium (Debian's chromium, driven over the DevTools
// protocol). Chromium reaches no network of its own: every request a page
// makes is paused (the Fetch domain) and answered by herald's guarded
// client within the task's scope (source.Page.Fetch), or failed. Each page
// gets a fresh browser with its own profile directory under the pool's
// directory, bounded in time and memory, downloads denied; the processes
// are killed when the page is done, and processes a crashed herald left
// behind are found by that directory and killed at start.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Defaults for zero Options fields.
const (
	DefaultTimeout     = 20 * time.Second
	DefaultMaxParallel = 2
	DefaultMemoryMB    = 1024
)

// ErrNoBrowser: no Chromium at the configured path or on PATH.
var ErrNoBrowser = errors.New("no browser")

// names are the commands tried on PATH when no path is configured.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the browser to run: path when set (it must be an
// executable file), else the first of chromium, chromium-browser and
// google-chrome on PATH. Its error says what was looked for.
func Find(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: browser.path %s is not an executable file", ErrNoBrowser, path)
		}
		return p, nil
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s is on PATH; install chromium (apt-get install chromium) or set browser.path", ErrNoBrowser, strings.Join(names, ", "))
}

// Options configures a Pool.
type Options struct {
	// Path is the browser executable; "" finds it on PATH (Find).
	Path string
	// Dir holds the pages' profile directories (<data-dir>/browser); it
	// is how the processes of a crashed herald are found again.
	Dir string
	// MaxParallel bounds the pages rendered at once (default 2).
	MaxParallel int
	// Timeout bounds one page, start of the browser included (default 20 s).
	Timeout time.Duration
	// MemoryMB bounds the resident memory of one page's browser
	// processes together (default 1024).
	MemoryMB int
	// Poll is how often memory and the page's progress are looked at
	// (default 100 ms).
	Poll time.Duration
}

// Pool renders pages, at most MaxParallel at once.
type Pool struct {
	o    Options
	exec string
	sem  chan struct{}
	peak atomic.Int64 // highest resident memory of a page seen, bytes
}

var _ source.Renderer = (*Pool)(nil)

// New finds the browser, makes Dir, and kills what an earlier herald
// left running under it.
func New(o Options) (*Pool, error) {
	p, err := Find(o.Path)
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("browser: no profile directory")
	}
	if o.MaxParallel <= 0 {
		o.MaxParallel = DefaultMaxParallel
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MemoryMB <= 0 {
		o.MemoryMB = DefaultMemoryMB
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("browser: profile directory: %w", err)
	}
	Sweep(o.Dir)
	return &Pool{o: o, exec: p, sem: make(chan struct{}, o.MaxParallel)}, nil
}

// Sweep kills every process started with a profile directory under dir
// (left by a herald that was killed) and removes the directories. It
// returns how many processes it killed.
func Sweep(dir string) int {
	n := killUnder(dir)
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "page-") {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	return n
}

// Bound is the most one page may take (Options.Timeout).
func (p *Pool) Bound() time.Duration { return p.o.Timeout }

// PeakMemory is the highest resident memory, in bytes, that one page's
// browser processes held together so far.
func (p *Pool) PeakMemory() int64 { return p.peak.Load() }

// skipped are the resources a list of notices never needs: failed in the
// browser without a request.
var skipped = map[network.ResourceType]bool{
	network.ResourceTypeImage: true, network.ResourceTypeMedia: true, network.ResourceTypeFont: true,
	network.ResourceTypeStylesheet: true, network.ResourceTypeTextTrack: true, network.ResourceTypePrefetch: true,
	network.ResourceTypeEventSource: true, network.ResourceTypeWebSocket: true, network.ResourceTypeManifest: true,
	network.ResourceTypeSignedExchange: true, network.ResourceTypePing: true, network.ResourceTypeCSPViolationReport: true,
	network.ResourceTypeFedCM: true,
}

// Render renders pg in a browser of its own and returns its markup once
// the page is quiet: no request of it pending for a moment.
func (p *Pool) Render(ctx context.Context, pg source.Page) (source.Rendered, error) {
	select {
	case p.sem <- struct{}{}:
		defer func() { <-p.sem }()
	case <-ctx.Done():
		return source.Rendered{}, ctx.Err()
	}
	dir, err := os.MkdirTemp(p.o.Dir, "page-")
	if err != nil {
		return source.Rendered{}, fmt.Errorf("browser: profile directory: %w", err)
	}
	defer func() {
		killUnder(dir)
		_ = os.RemoveAll(dir)
	}()
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, p.flags(dir)...)
	defer cancelAlloc()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()

	r := &page{p: p, pg: pg, ctx: bctx, dir: dir, last: time.Now()}
	out, err := r.run(pg.Selector)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(err, new(*watch.Error)) {
		// The page's own bound, wherever it struck (start, load, settle).
		return out, watch.Errorf(watch.Transient, "browser: the page did not settle within %s", p.o.Timeout)
	}
	return out, err
}

func (p *Pool) flags(dir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(p.exec),
		chromedp.UserDataDir(dir),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("blink-settings", "imagesEnabled=false"),
		chromedp.Flag("renderer-process-limit", "1"),
		chromedp.Flag("js-flags", fmt.Sprintf("--max-old-space-size=%d", max(64, p.o.MemoryMB/4))),
		// Every request is answered through the Fetch domain; should one
		// escape it, it meets a proxy that is not there.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.WindowSize(1280, 1024),
	}
}

// page is one page being rendered.
type page struct {
	p        *Pool
	pg       source.Page
	ctx      context.Context
	dir      string
	wg       sync.WaitGroup
	mu       sync.Mutex
	inflight int
	last     time.Time // the last request paused or answered
	failure  error     // a page request's error that ends the render
}

func (r *page) run(selector string) (source.Rendered, error) {
	ctx := r.ctx
	if err := chromedp.Do(ctx); err != nil {
		return source.Rendered{}, fmt.Errorf("browser: start: %w", err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny}); err != nil {
		return source.Rendered{}, fmt.Errorf("browser: deny downloads: %w", err)
	}
	evctx, stopEvents := context.WithCancel(ctx)
	defer func() {
		stopEvents()
		r.wg.Wait()
	}()
	paused := chromedp.Events(evctx, fetch.RequestPaused)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			r.begin()
			r.wg.Add(1)
			go r.answer(evctx, ev)
		}
	}()
	over := make(chan error, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.watchMemory(evctx, over)
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return source.Rendered{}, fmt.Errorf("browser: intercept requests: %w", err)
	}
	nav := make(chan error, 1)
	go func() { nav <- chromedp.Do(ctx, chromedp.Navigate(r.pg.URL.String())) }()
	select {
	case err := <-nav:
		if err != nil {
			return source.Rendered{}, r.fail(fmt.Errorf("browser: load the page: %w", err))
		}
	case err := <-over:
		return source.Rendered{}, err
	}
	if err := r.settle(selector, over); err != nil {
		return source.Rendered{}, err
	}
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil {
		return source.Rendered{}, r.fail(fmt.Errorf("browser: read the page: %w", err))
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	out := source.Rendered{HTML: []byte(html)}
	if u, perr := url.Parse(loc); err == nil && perr == nil && (u.Scheme == "http" || u.Scheme == "https") {
		out.URL = u
	}
	return out, r.failed()
}

// settle waits until the page has made no request for a moment: a short
// one once the selector matches, a longer one otherwise; the page's time
// bound ends the wait with what the page shows by then.
func (r *page) settle(selector string, over <-chan error) error {
	tick := time.NewTicker(r.p.o.Poll)
	defer tick.Stop()
	count := fmt.Sprintf("document.querySelectorAll(%q).length", selector)
	for {
		select {
		case err := <-over:
			return err
		case <-r.ctx.Done():
			return r.fail(fmt.Errorf("browser: the page did not settle within %s", r.p.o.Timeout))
		case <-tick.C:
		}
		if err := r.failed(); err != nil {
			return err
		}
		r.mu.Lock()
		quiet := r.inflight == 0
		since := time.Since(r.last)
		r.mu.Unlock()
		if !quiet {
			continue
		}
		if since >= 10*r.p.o.Poll {
			return nil
		}
		if selector != "" && since >= 3*r.p.o.Poll {
			if n, err := chromedp.Run(r.ctx, chromedp.Evaluate[int](count)); err == nil && n > 0 {
				return nil
			}
		}
	}
}

func (r *page) begin() {
	r.mu.Lock()
	r.inflight++
	r.last = time.Now()
	r.mu.Unlock()
}

func (r *page) end(err error) {
	r.mu.Lock()
	r.inflight--
	r.last = time.Now()
	if err != nil && r.failure == nil {
		r.failure = err
	}
	r.mu.Unlock()
}

func (r *page) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure
}

// fail prefers the failure a page request reported (a cap, a cancel) to
// the browser's own account of it.
func (r *page) fail(err error) error {
	if f := r.failed(); f != nil {
		return f
	}
	return err
}

// answer answers one paused request: skipped kinds of resources are
// failed at once, the rest sent through the page's Fetch.
func (r *page) answer(ctx context.Context, ev fetch.EventRequestPaused) {
	defer r.wg.Done()
	var ended error
	defer func() { r.end(ended) }()
	failWith := func(reason network.ErrorReason) {
		_, _ = chromedp.Call(r.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: reason})
	}
	u, err := url.Parse(ev.Request.URL)
	if skipped[ev.ResourceType] || err != nil {
		failWith(network.ErrorReasonBlockedByClient)
		return
	}
	// The main frame's id is its target's: only the page itself, not a
	// frame in it, decides the run.
	main := string(ev.FrameID) == string(chromedp.FromContext(r.ctx).Target.TargetID)
	req := source.PageRequest{Method: ev.Request.Method, URL: u, Header: http.Header{},
		Document: ev.ResourceType == network.ResourceTypeDocument && main}
	for k, v := range ev.Request.Headers {
		if s, ok := v.(string); ok {
			req.Header.Set(k, s)
		}
	}
	for _, e := range ev.Request.PostDataEntries {
		req.Body = append(req.Body, e.Bytes...)
	}
	resp, err := r.pg.Fetch(ctx, req)
	if err != nil {
		if !errors.Is(err, source.ErrRefused) && ctx.Err() == nil {
			// The page itself, or a cap: the render cannot be trusted.
			if c := watch.ClassOf(err); c == watch.TooLarge || req.Document {
				ended = err
			}
		}
		failWith(network.ErrorReasonBlockedByClient)
		return
	}
	var hdrs []*fetch.HeaderEntry
	for k, vs := range resp.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			hdrs = append(hdrs, &fetch.HeaderEntry{Name: k, Value: v})
		}
	}
	_, _ = chromedp.Call(r.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID,
		ResponseCode: int64(resp.Status), ResponseHeaders: hdrs, Body: resp.Body})
}

// watchMemory sums the resident memory of the page's processes; over the
// bound, it reports TooLarge and kills them.
func (r *page) watchMemory(ctx context.Context, over chan<- error) {
	limit := int64(r.p.o.MemoryMB) << 20
	tick := time.NewTicker(r.p.o.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rss := residentUnder(r.dir)
		for {
			peak := r.p.peak.Load()
			if rss <= peak || r.p.peak.CompareAndSwap(peak, rss) {
				break
			}
		}
		if rss > limit {
			err := watch.Errorf(watch.TooLarge, "the page took more than %d MiB of memory in the browser", r.p.o.MemoryMB)
			// Recorded before the kill, so the browser's end reads as this.
			r.mu.Lock()
			if r.failure == nil {
				r.failure = err
			}
			r.mu.Unlock()
			killUnder(r.dir)
			over <- err
			return
		}
	}
}

// Leftovers lists the processes running with a profile directory under
// dir: none once every page is done, and none after a start's Sweep.
func Leftovers(dir string) []int { return pidsUnder(dir) }
