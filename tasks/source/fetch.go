package source

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// document is one fetched body.
type document struct {
	url         *url.URL // final URL, after redirects: the base for relative links
	body        []byte
	contentType string
	header      http.Header
	validators  watch.Conditional
	notModified bool
	blocked     []string // a rendered page's refused requests
}

// clients are the guarded HTTP clients every Source shares, one per
// distinct set of egress options: a run reuses the kept-alive connections
// of the runs before it instead of dialling (and leaving behind an idle
// connection) each time.
var clients sync.Map // clientKey → *http.Client

type clientKey struct {
	allowPrivate            bool
	connectTimeout, timeout time.Duration
	userAgent, trusted      string
	route                   string
}

func newClient(o Options) *http.Client {
	key := clientKey{o.AllowPrivate, o.ConnectTimeout, o.Timeout, o.UserAgent, fmt.Sprint(o.Trusted), o.Route.Key()}
	if c, ok := clients.Load(key); ok {
		return c.(*http.Client)
	}
	c, _ := clients.LoadOrStore(key, egress.Client(egress.Options{
		AllowPrivate:   o.AllowPrivate,
		ConnectTimeout: o.ConnectTimeout,
		Timeout:        o.Timeout,
		UserAgent:      o.UserAgent,
		Trusted:        o.Trusted,
		Route:          o.Route,
	}))
	return c.(*http.Client)
}

// ShowURL is how a source's address is shown to people: scheme, host and
// path; a query or fragment is elided (it may carry a token, I10).
func ShowURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(address)"
	}
	s := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" || u.Fragment != "" {
		s += "?…"
	}
	return s
}

// redact keeps scheme and host: paths and queries of calendar and API URLs
// often carry access tokens (I10).
func redact(u *url.URL) string {
	if u == nil {
		return "source"
	}
	return u.Scheme + "://" + u.Host
}

func (s *Source) timeout() time.Duration {
	if s.o.Timeout <= 0 {
		return egress.DefaultTimeout
	}
	return s.o.Timeout
}

// fetch GETs the source, following in-scope redirects by hand so that each
// hop is checked against the scope and dialled through the address guard.
func (s *Source) fetch(parent context.Context, cond watch.Conditional) (*document, error) {
	// One deadline for the whole fetch, redirects, a sign-in and body
	// included; a page rendered in a browser has the browser's bound more.
	bound := s.timeout()
	if s.spec.Render == watch.RenderBrowser && s.o.Browser != nil {
		bound += s.o.Browser.Bound()
	}
	ctx, cancel := context.WithTimeout(parent, bound)
	defer cancel()
	c, err := s.newCall(ctx)
	if err != nil {
		return nil, err
	}
	return s.readSignedIn(ctx, parent, c, func() (*document, error) {
		if s.spec.Render == watch.RenderBrowser {
			return s.render(ctx, parent, c)
		}
		return s.follow(ctx, parent, kind.Request{URL: s.u}, cond, c)
	})
}

// follow sends r, following in-scope redirects; a POST redirected with
// 301, 302 or 303 goes on as a GET without its body. c, when not nil,
// signs each request and keeps each answer's cookies; a read redirected
// to the sign-in page ends with errSignedOut.
func (s *Source) follow(ctx, parent context.Context, r kind.Request, cond watch.Conditional, c *call) (*document, error) {
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	cur := r.URL
	for hop := 0; ; hop++ {
		resp, err := s.get(ctx, r.Method, cur, r.Form, r.Header, cond, c)
		if err != nil {
			s.observe(0, 0)
			return nil, s.classifyTransport(parent, cur, err)
		}
		if c != nil && c.jar != nil {
			c.jar.set(cur, resp.Header)
		}
		if resp.StatusCode < 200 || resp.StatusCode >= 300 {
			s.observe(resp.StatusCode, 0)
		}
		switch {
		case isRedirect(resp.StatusCode):
			loc := resp.Header.Get("Location")
			drain(resp)
			if hop >= MaxRedirects {
				return nil, watch.Errorf(watch.Transient, "%s %s: more than %d redirects", r.Method, redact(r.URL), MaxRedirects)
			}
			next, err := cur.Parse(loc)
			if loc == "" || err != nil || (next.Scheme != "http" && next.Scheme != "https") || next.User != nil {
				return nil, watch.Errorf(watch.Schema, "%s %s: unusable redirect", r.Method, redact(cur))
			}
			if c != nil && !c.signingIn && c.atLogin(next, s.u) {
				return nil, errSignedOut
			}
			if !s.inScope(next) && !s.isInstance(next) && !c.allows(next, s.u) {
				return nil, watch.Errorf(watch.Scope, "%s %s: redirect to %s is outside the approved scope", r.Method, redact(cur), next.Hostname())
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead &&
				resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect {
				r.Method, r.Form = http.MethodGet, nil
			}
			cur = next
			continue
		case resp.StatusCode == http.StatusNotModified:
			drain(resp)
			v := validators(resp)
			if v.ETag == "" {
				v.ETag = cond.ETag
			}
			if v.LastModified == "" {
				v.LastModified = cond.LastModified
			}
			return &document{url: cur, notModified: true, validators: v}, nil
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			body, err := s.readBody(resp)
			s.observe(resp.StatusCode, len(body))
			if err != nil {
				return nil, s.classifyTransport(parent, cur, err)
			}
			return &document{
				url:         cur,
				body:        body,
				contentType: resp.Header.Get("Content-Type"),
				header:      resp.Header,
				validators:  validators(resp),
			}, nil
		default:
			class := statusClass(resp.StatusCode)
			if s.kind != nil && s.kind.Status != nil {
				head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
				if c := s.kind.Status(resp.StatusCode, resp.Header, head); c != "" {
					class = c
				}
			}
			drain(resp)
			err := &watch.Error{Class: class, Err: fmt.Errorf("%s %s: HTTP %d", r.Method, redact(cur), resp.StatusCode)}
			if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
				err.Wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
			}
			return nil, err
		}
	}
}

func (s *Source) get(ctx context.Context, method string, u *url.URL, form url.Values, hdr http.Header, cond watch.Conditional, c *call) (*http.Response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, watch.Errorf(watch.Schema, "request for %s: bad URL", redact(u))
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	accept := "*/*"
	if s.kind != nil && s.kind.Accept != "" {
		accept = s.kind.Accept
	}
	req.Header.Set("Accept", accept)
	// Asking for compression ourselves turns off the transport's transparent
	// decompression, so readBody can cap the decompressed size.
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	if sameOrigin(u, s.u) {
		// Configured headers carry credentials: they go only to the
		// approved origin, never across a redirect to another host or scheme.
		for k, v := range s.spec.Headers {
			req.Header.Set(k, v)
		}
		for k, vs := range hdr {
			req.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	if ck := c.cookieHeader(u, s.u); ck != "" {
		req.Header.Set("Cookie", ck)
	}
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	return s.client.Do(req)
}

func (s *Source) observe(status, bytes int) {
	if s.o.Observe != nil {
		s.o.Observe(status, bytes)
	}
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Host, b.Host) && a.Scheme == b.Scheme
}

// inScope: a Scope, when set, decides every redirect (the approved host
// and path prefix, I8); without one, only the same host is followed.
func (s *Source) inScope(next *url.URL) bool {
	if s.o.Scope != nil {
		return s.o.Scope(next)
	}
	return strings.EqualFold(next.Hostname(), s.u.Hostname()) && (next.Port() == s.u.Port() || next.Scheme == "https" && next.Port() == "")
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func validators(resp *http.Response) watch.Conditional {
	return watch.Conditional{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
}

// MaxRetryAfter bounds how long a source's Retry-After holds its host
// back: a server asking for a week is checked again after a day.
const MaxRetryAfter = 24 * time.Hour

// retryAfter reads a Retry-After value (delay seconds, or an HTTP date
// measured from now) as the wait a 429 or 503 asks for; zero when the
// value is missing, unreadable or already past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	var d time.Duration
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

func statusClass(code int) watch.Class {
	switch {
	case code == http.StatusUnauthorized:
		return watch.Auth
	case code == http.StatusForbidden:
		return watch.Permission
	case code == http.StatusNotFound, code == http.StatusGone:
		return watch.NotFound
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return watch.Transient
	case code == http.StatusRequestEntityTooLarge:
		return watch.TooLarge
	}
	return watch.Schema
}

// drain discards a little of an unused body so the connection can be reused.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// errTooLarge marks a body over the cap.
var errTooLarge = errors.New("document larger than the size limit")

// readBody reads at most MaxBytes, and at most MaxBytes again after
// decompression, so neither a huge body nor a compression bomb can hold
// more than the cap in memory.
func (s *Source) readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	max := s.o.MaxBytes
	if resp.ContentLength > max {
		return nil, watch.Errorf(watch.TooLarge, "%w: %d bytes announced, limit %d", errTooLarge, resp.ContentLength, max)
	}
	raw, err := readCapped(resp.Body, max, resp.ContentLength)
	if err != nil {
		return nil, err
	}
	var dec io.Reader
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "", "identity":
		return raw, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, watch.Errorf(watch.Schema, "gzip body: %w", err)
		}
		dec = zr
	case "deflate":
		// HTTP "deflate" is zlib-wrapped, but some servers send raw deflate.
		if zr, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			dec = zr
		} else {
			dec = flate.NewReader(bytes.NewReader(raw))
		}
	default:
		return nil, watch.Errorf(watch.Schema, "unsupported content encoding")
	}
	body, err := readCapped(dec, max, -1)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, err
		}
		return nil, watch.Errorf(watch.Schema, "decompress body: %w", errors.Unwrap(err))
	}
	return body, nil
}

// readCapped reads r up to max bytes; one byte more is TooLarge.
func readCapped(r io.Reader, max, hint int64) ([]byte, error) {
	var buf bytes.Buffer
	if hint > 0 && hint <= max {
		buf.Grow(int(hint) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if n > max {
		return nil, watch.Errorf(watch.TooLarge, "%w: limit %d bytes", errTooLarge, max)
	}
	return buf.Bytes(), nil
}

// classifyTransport turns a request or read failure into a classified
// error without the URL's path or query.
func (s *Source) classifyTransport(parent context.Context, u *url.URL, err error) error {
	var we *watch.Error
	if errors.As(err, &we) {
		return err
	}
	var ue *url.Error
	target := u
	if errors.As(err, &ue) {
		err = ue.Err
		if t, perr := url.Parse(ue.URL); perr == nil && t.Host != "" {
			target = t // a redirect's destination is what was refused
		}
	}
	switch {
	case parent.Err() != nil:
		return watch.Errorf(watch.Cancelled, "GET %s: %w", redact(u), parent.Err())
	case errors.Is(err, egress.ErrBlocked):
		return &watch.Error{Class: watch.BlockedAddress, Err: refused(target, err)}
	}
	if pe, ok := egress.ProxyFailure(err); ok && pe.Kind == egress.ProxyAuth {
		// The proxy refused herald's credentials: the config must change,
		// so the run ends at once (I6) instead of retrying.
		return &watch.Error{Class: watch.Auth, Err: pe}
	} else if ok {
		return watch.Errorf(watch.Transient, "GET %s: %w", redact(u), pe)
	}
	return watch.Errorf(watch.Transient, "GET %s: %w", redact(u), err)
}

// getter is the kind.Getter of one run: each request must stay within the
// approved scope, and its document is checked for an API error envelope.
type getter struct {
	s      *Source
	parent context.Context
	last   *kind.Document // the document Do returned last: a Run's feed title is read off it
}

func (g *getter) Do(ctx context.Context, r kind.Request) (*kind.Document, error) {
	s := g.s
	if r.URL == nil {
		r.URL = s.u
	}
	if !sameOrigin(r.URL, s.u) && !s.inScope(r.URL) && !s.isInstance(r.URL) {
		return nil, watch.Errorf(watch.Scope, "request to %s is outside the approved scope", r.URL.Hostname())
	}
	doc, err := s.follow(ctx, g.parent, r, watch.Conditional{}, nil)
	if err != nil {
		return nil, err
	}
	if err := apiError(s.spec.Kind, s.spec, doc.body); err != nil {
		return nil, err
	}
	g.last = &kind.Document{URL: doc.url, Body: doc.body, ContentType: doc.contentType, Header: doc.header}
	return g.last, nil
}

// isInstance reports whether u is on a configured RSSHub instance: the
// admin named those, so a route may be asked of each (SPEC §18).
func (s *Source) isInstance(u *url.URL) bool {
	if s.kind == nil || !s.kind.Instances {
		return false
	}
	for _, in := range s.o.Instances {
		if in.URL != nil && sameOrigin(u, in.URL) {
			return true
		}
	}
	return false
}
