// Package source fetches watched sources and turns them into items: one
// guarded fetcher (size cap, timeouts, conditional GET, scoped redirects,
// failure classes) and the table of kinds it runs (kinds.go), each with
// its parser or multi-request run and its rules.
package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/andybalholm/cascadia"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Defaults applied when an Options field is zero.
const (
	DefaultMaxBytes = 10 << 20 // I7: 10 MiB per fetched document
	DefaultMaxItems = 10000
	MaxRedirects    = 5
)

// ErrInvalidSpec reports a spec New refuses.
var ErrInvalidSpec = errors.New("invalid source")

// Options configures how a Source fetches.
type Options struct {
	// AllowPrivate mirrors policy.allow_private_networks.
	AllowPrivate bool
	// MaxBytes caps the document, before and after decompression (default 10 MiB).
	MaxBytes int64
	// MaxItems caps the items one document may list (default 10,000); a
	// document listing more fails with class TooLarge rather than being
	// silently truncated, which would later read as removals.
	MaxItems int
	// ConnectTimeout and Timeout bound connecting and the whole fetch
	// including redirects (egress defaults: 5s, 30s).
	ConnectTimeout, Timeout time.Duration
	// Scope reports whether a redirect target is within the approved scope
	// (host and path prefix); it decides every redirect, same host
	// included. nil: only redirects to the same host are followed.
	Scope func(*url.URL) bool
	// DefaultZone interprets floating times and DATE values (default UTC).
	DefaultZone *time.Location
	// Now is the clock that places the window of listed occurrences of
	// recurring calendar entries (default time.Now).
	Now func() time.Time
	// UserAgent overrides the default polite User-Agent.
	UserAgent string
	// Token, when set, is asked for the access token at each run of a
	// kind that takes one and whose spec carries none (a token given in
	// chat, kept in the credential store); its error ends the run.
	Token func(ctx context.Context) (string, error)
	// Trusted lists exact destinations the address guard lets through
	// whatever AllowPrivate says (see egress.Options.Trusted).
	Trusted []netip.AddrPort
	// Instances are the RSSHub instances an rsshub watch asks, in order
	// (sources.rsshub.instances); requests to them are within scope.
	Instances []Instance
	// Observe, when set, hears of every request's answer: its status (0:
	// none came) and the bytes of the document read (metrics).
	Observe func(status, bytes int)
	// Route is the way out (SPEC §17; nil: direct). The guard judges
	// the target whatever the route.
	Route *egress.Route
	// Session keeps a form login's cookies between runs (source.auth.login);
	// nil: each run signs in afresh.
	Session Session
	// Cookie, when set, is asked at each run of a watch with source.auth
	// but no cookie or login in it for the cookie its owner gave in chat.
	Cookie func(ctx context.Context) (string, error)
	// Browser renders the pages of watches with render: browser; nil:
	// such a watch fails, never read without rendering.
	Browser Renderer
	// HostAllowed reports whether policy.allowed_hosts lets a rendered
	// page's request reach host, one other than the page's own and the
	// scope's; nil: none.
	HostAllowed func(host string) bool
}

// Within is the Scope of an approval: redirects may go to host (its port
// included, compared without regard to case) and to a path under prefix,
// segment by segment after resolving dot segments, encoded ones included
// (egress.PathWithin): "/feeds" does not cover "/feeds-private" or
// "/feeds/%2e%2e/admin".
func Within(host, prefix string) func(*url.URL) bool {
	return func(u *url.URL) bool {
		return strings.EqualFold(u.Host, host) && egress.PathWithin(prefix, u)
	}
}

// Source fetches one watched source.
type Source struct {
	spec     watch.Spec
	u        *url.URL
	o        Options
	client   *http.Client
	selector cascadia.Selector
	kind     *kind.Kind // nil: detected from each fetched document
}

// New validates spec and returns its Source; its kind must be one of the
// registry's, or empty to detect it from each fetched document.
func New(spec watch.Spec, o Options) (*Source, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	if o.DefaultZone == nil {
		o.DefaultZone = time.UTC
	}
	u, err := checkSourceURL(spec.URL)
	if err != nil {
		return nil, err
	}
	s := &Source{spec: spec, u: u, o: o}
	var errs []error
	if k, ok := Lookup(spec.Kind); ok {
		s.kind = &k
		if k.NeedsSelector && strings.TrimSpace(spec.Selector) == "" {
			errs = append(errs, fmt.Errorf("%w: %s source needs a selector", ErrInvalidSpec, k.Name))
		}
		if k.Instances {
			if _, err := CleanRoute(spec.Route); err != nil {
				errs = append(errs, err)
			}
		}
	} else if spec.Kind != "" {
		errs = append(errs, fmt.Errorf("%w: unknown kind %q", ErrInvalidSpec, spec.Kind))
	}
	if spec.Selector != "" {
		sel, err := cascadia.Compile(spec.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: bad selector: %w", ErrInvalidSpec, err))
		}
		s.selector = sel
	}
	errs = append(errs, checkAuth(spec)...)
	for k, v := range spec.Headers {
		// The value may be a secret: name the header, never the value.
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			errs = append(errs, fmt.Errorf("%w: header %q is malformed", ErrInvalidSpec, sanitizeName(k)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.client = newClient(o)
	return s, nil
}

// Spec returns the spec s was built from.
func (s *Source) Spec() watch.Spec { return s.spec }

// checkSourceURL accepts absolute http(s) URLs without credentials. Plain
// http is allowed for sources (many feeds are served that way); where the
// address points is judged by the dial guard.
func checkSourceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: URL does not parse", ErrInvalidSpec)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: URL scheme must be http or https", ErrInvalidSpec)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: URL has no host", ErrInvalidSpec)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: credentials in the URL; use headers", ErrInvalidSpec)
	}
	return u, nil
}

func sanitizeName(k string) string {
	if len(k) > 40 {
		k = k[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, k)
}

// Fetch fetches and parses the source. Errors are *watch.Error with a
// Class, and never carry header values or the URL's path and query. On 304
// the Result has NotModified set, no items, and Kind as configured. A kind
// that runs several requests yields its complete item set or an error,
// never part of one. Fetch is safe for concurrent use.
func (s *Source) Fetch(ctx context.Context, cond watch.Conditional) (watch.Result, error) {
	if s.kind != nil && s.kind.Run != nil {
		return s.run(ctx, *s.kind)
	}
	doc, err := s.fetch(ctx, cond)
	if err != nil {
		return watch.Result{}, err
	}
	return s.read(doc)
}

// read makes the items of a fetched document.
func (s *Source) read(doc *document) (watch.Result, error) {
	res := watch.Result{Validators: doc.validators, Kind: s.spec.Kind}
	if doc.notModified {
		res.NotModified = true
		return res, nil
	}
	k, err := s.kindOf(doc)
	if err != nil {
		return watch.Result{}, err
	}
	res.Kind = k.Name
	if err := apiError(k.Name, s.spec, doc.body); err != nil {
		return watch.Result{}, err
	}
	d := &kind.Document{URL: doc.url, Body: doc.body, ContentType: doc.contentType, Header: doc.header}
	items, err := k.Parse(d, s.input())
	if (err != nil || len(items) == 0) && s.loginPage(doc) {
		// A sign-in page where the list was expected: not an empty list,
		// which would read as every item removed.
		return watch.Result{}, watch.Errorf(watch.Auth, "%s answers with a sign-in page instead of the list; see source.auth", redact(doc.url))
	}
	if err != nil {
		return watch.Result{}, err
	}
	res.Title = d.Title

	if err := s.checkCount(items); err != nil {
		return watch.Result{}, err
	}
	res.Items, res.Skipped, res.Selector, res.Blocked = items, d.Skipped, d.Selector, doc.blocked
	return res, nil
}

// kindOf is the configured kind, else the one doc is detected as.
func (s *Source) kindOf(doc *document) (kind.Kind, error) {
	if s.kind != nil {
		return *s.kind, nil
	}
	k, ok := Lookup(Detect(doc.contentType, doc.body))
	switch {
	case !ok || k.Parse == nil:
		return kind.Kind{}, watch.Errorf(watch.Schema, "cannot tell what kind of document %s serves", redact(doc.url))
	case k.NeedsSelector && s.spec.Selector == "":
		return kind.Kind{}, watch.Errorf(watch.Schema, "%s serves an HTML page; an %s watch needs a selector", redact(doc.url), k.Name)
	}
	return k, nil
}

func (s *Source) checkCount(items []watch.Item) error {
	if len(items) > s.o.MaxItems {
		return watch.Errorf(watch.TooLarge, "%d items, more than the limit of %d", len(items), s.o.MaxItems)
	}
	return nil
}

// run carries out a kind that makes several requests, all within one
// deadline, and keeps its items only when the whole run succeeded.
func (s *Source) run(parent context.Context, k kind.Kind) (watch.Result, error) {
	timeout := s.timeout()
	in := s.input()
	if k.Instances {
		// Each instance may take the whole fetch timeout (askInstance).
		in.Instances = s.o.Instances
		timeout *= time.Duration(max(1, len(in.Instances)))
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	if k.Token && in.Spec.Token == "" && s.o.Token != nil {
		tok, err := s.o.Token(ctx)
		if err != nil {
			return watch.Result{}, err
		}
		in.Spec.Token = tok
	}
	g := &getter{s: s, parent: parent}
	items, err := k.Run(ctx, g, in)
	if err != nil {
		return watch.Result{}, s.classifyTransport(parent, s.u, err)
	}
	if err := s.checkCount(items); err != nil {
		return watch.Result{}, err
	}
	res := watch.Result{Kind: k.Name, Items: items}
	if g.last != nil {
		res.Title = g.last.Title // set by a Run that reads its feed's own title (rsshub)
	}
	return res, nil
}

// checkAuth checks a watch's sign-in and rendering; errors name the
// field, never its value (a secret, I10).
func checkAuth(spec watch.Spec) []error {
	var errs []error
	switch spec.Render {
	case "", watch.RenderBrowser:
	default:
		errs = append(errs, fmt.Errorf("%w: render must be %q or empty", ErrInvalidSpec, watch.RenderBrowser))
	}
	if spec.Render != "" && spec.Kind != "" && spec.Kind != KindHTML {
		errs = append(errs, fmt.Errorf("%w: only html pages are rendered in a browser", ErrInvalidSpec))
	}
	a := spec.Auth
	if a == nil {
		return errs
	}
	if strings.ContainsAny(a.Cookie, "\r\n") {
		errs = append(errs, fmt.Errorf("%w: auth.cookie is malformed", ErrInvalidSpec))
	}
	if a.Login != nil {
		if a.Cookie != "" {
			errs = append(errs, fmt.Errorf("%w: auth takes a cookie or a login, not both", ErrInvalidSpec))
		}
		if _, err := checkSourceURL(a.Login.URL); err != nil {
			errs = append(errs, fmt.Errorf("%w: auth.login.url must be an http(s) address", ErrInvalidSpec))
		}
	}
	return errs
}
