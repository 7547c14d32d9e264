package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Renderer renders one page in a browser (package tasks/source/browser)
// whose every request goes through Page.Fetch: the browser itself reaches
// no network.
type Renderer interface {
	Render(ctx context.Context, p Page) (Rendered, error)
	// Bound is the most one page may take.
	Bound() time.Duration
}

// Page is a page to render.
type Page struct {
	URL *url.URL
	// Selector is the watch's CSS selector: the page is read once it
	// matches and the page is quiet ("" : once quiet).
	Selector string
	// Fetch sends one request of the page through herald's guarded client
	// within the task's scope; a refused request fails with ErrRefused.
	Fetch func(ctx context.Context, r PageRequest) (*PageResponse, error)
}

// PageRequest is one request a page makes.
type PageRequest struct {
	Method   string
	URL      *url.URL
	Header   http.Header
	Body     []byte
	Document bool // the page itself (its main frame), not a frame or a script's request
}

// PageResponse is the answer the browser is given.
type PageResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// Rendered is the page after its scripts ran: its address and markup.
type Rendered struct {
	URL  *url.URL
	HTML []byte
}

// ErrRefused marks a page's request refused by the address guard or the
// scope; the run record lists it (RunRecord.Blocked).
var ErrRefused = errors.New("request refused")

// maxBlocked bounds the refused requests a run record lists.
const maxBlocked = 20

// render renders the source's page: the browser's requests are judged by
// the scope, sent through the guarded client, and signed as the source's
// own are; those refused are listed in the document.
func (s *Source) render(ctx context.Context, parent context.Context, c *call) (*document, error) {
	if s.o.Browser == nil {
		return nil, watch.Errorf(watch.Schema, "%s is to be rendered in a browser, and no browser is configured (browser.path)", redact(s.u))
	}
	pf := &pageFetch{s: s, c: c, budget: 3 * s.o.MaxBytes}
	out, err := s.o.Browser.Render(ctx, Page{URL: s.u, Selector: s.spec.Selector, Fetch: pf.fetch})
	pf.mu.Lock()
	failed := pf.failed
	pf.mu.Unlock()
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		if parent.Err() != nil {
			return nil, watch.Errorf(watch.Cancelled, "render %s: %w", redact(s.u), parent.Err())
		}
		if errors.As(err, new(*watch.Error)) {
			return nil, err
		}
		return nil, watch.Errorf(watch.Transient, "render %s: %w", redact(s.u), err)
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if int64(len(out.HTML)) > s.o.MaxBytes {
		return nil, watch.Errorf(watch.TooLarge, "%w: the rendered page exceeds %d bytes", errTooLarge, s.o.MaxBytes)
	}
	u := out.URL
	if u == nil {
		u = s.u
	}
	return &document{url: u, body: out.HTML, contentType: "text/html; charset=utf-8", blocked: pf.blocked}, nil
}

// pageFetch sends a rendered page's requests.
type pageFetch struct {
	s      *Source
	c      *call
	mu     sync.Mutex
	budget int64 // bytes the page may still read
	// failed is the first answer for the page itself outside 2xx and 3xx,
	// classified as a direct fetch's would be.
	failed  error
	blocked []string
}

func (pf *pageFetch) fetch(ctx context.Context, r PageRequest) (*PageResponse, error) {
	s := pf.s
	if err := pf.refusal(ctx, r.URL); err != nil {
		pf.block(r, err)
		return nil, fmt.Errorf("%w: %s", ErrRefused, err.Error())
	}
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL.String(), body)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"Accept", "Content-Type", "X-Requested-With", "Accept-Language"} {
		if v := r.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	if sameOrigin(r.URL, s.u) {
		for k, v := range s.spec.Headers {
			req.Header.Set(k, v)
		}
	}
	if ck := pf.c.cookieHeader(r.URL, s.u); ck != "" {
		req.Header.Set("Cookie", ck)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrBlocked) {
			why := refused(r.URL, err)
			pf.block(r, why)
			return nil, fmt.Errorf("%w: %s", ErrRefused, why.Error())
		}
		return nil, s.classifyTransport(ctx, r.URL, err)
	}
	defer resp.Body.Close()
	if pf.c != nil && pf.c.jar != nil {
		pf.c.jar.set(r.URL, resp.Header)
	}
	pf.mu.Lock()
	left := min(pf.budget, s.o.MaxBytes)
	pf.mu.Unlock()
	b, err := readCapped(resp.Body, left, resp.ContentLength)
	if err != nil {
		return nil, err
	}
	s.observe(resp.StatusCode, len(b))
	pf.mu.Lock()
	pf.budget -= int64(len(b))
	if r.Document && resp.StatusCode >= 400 && pf.failed == nil && sameOrigin(r.URL, s.u) {
		pf.failed = watch.Errorf(statusClass(resp.StatusCode), "GET %s: HTTP %d", redact(r.URL), resp.StatusCode)
	}
	pf.mu.Unlock()
	h := resp.Header.Clone()
	h.Del("Set-Cookie") // the session is herald's; the page never sees it
	return &PageResponse{Status: resp.StatusCode, Header: h, Body: b}, nil
}

// errOutside refuses a page's request to a host beyond its scope.
var errOutside = errors.New("outside the task's scope and policy.allowed_hosts")

// refusal says why a page may not send a request to u, nil when it may:
// only http(s), to the page's own host, the task's scope, the sign-in
// host, or a host policy.allowed_hosts names. A literal address is judged
// here as the dial would judge it; a name, when the guarded client dials.
func (pf *pageFetch) refusal(ctx context.Context, u *url.URL) error {
	s := pf.s
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("only http and https are fetched")
	case u.User != nil:
		return errors.New("credentials in the address")
	}
	if err := Refusal(ctx, u, s.o.AllowPrivate, nil); err != nil && !pf.trusted(u) {
		return err
	}
	switch {
	case strings.EqualFold(u.Host, s.u.Host), s.inScope(u):
		return nil
	case pf.c != nil && pf.c.login != nil && strings.EqualFold(u.Host, pf.c.login.Host):
		return nil
	case s.o.HostAllowed != nil && s.o.HostAllowed(strings.ToLower(u.Hostname())):
		return nil
	}
	return errOutside
}

// trusted reports whether u names one of the destinations policy trusts
// by exact address.
func (pf *pageFetch) trusted(u *url.URL) bool {
	for _, t := range pf.s.o.Trusted {
		if u.Host == t.String() {
			return true
		}
	}
	return false
}

// block lists a refused request; one for the page itself fails the run
// with class blocked_address or scope.
func (pf *pageFetch) block(r PageRequest, err error) {
	line := redact(r.URL) + ": " + err.Error()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if r.Document && pf.failed == nil {
		class := watch.Scope
		if errors.Is(err, egress.ErrBlocked) {
			class = watch.BlockedAddress
		}
		pf.failed = &watch.Error{Class: class, Err: err}
	}
	if len(pf.blocked) < maxBlocked && !slices.Contains(pf.blocked, line) {
		pf.blocked = append(pf.blocked, line)
	}
}
