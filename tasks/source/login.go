package source

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/charset"

	"github.com/herald-bridge/herald/tasks/source/kind"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Session keeps a form login's cookies between runs and restarts (a
// channel credential, store/credentials). Load answers "" when none is
// kept.
type Session interface {
	Load(ctx context.Context) (string, error)
	Save(ctx context.Context, state string) error
}

// errSignedOut: a read was sent to the sign-in page.
var errSignedOut = watch.Errorf(watch.Auth, "the site asks to sign in")

// call is what one Fetch signs its requests with: a cookie for the
// source's origin (source.auth.cookie, or one given in chat) and the
// session of a form login.
type call struct {
	cookie    string
	jar       *jar     // nil: no form login
	login     *url.URL // the sign-in page
	signingIn bool     // redirects may reach the sign-in host and the source's host
}

// atLogin reports whether u is the sign-in page: its path on its host,
// or any page of a sign-in host other than the source's.
func (c *call) atLogin(u, src *url.URL) bool {
	if c == nil || c.login == nil || u == nil || !strings.EqualFold(u.Host, c.login.Host) {
		return false
	}
	return !strings.EqualFold(u.Host, src.Host) || strings.TrimSuffix(u.Path, "/") == strings.TrimSuffix(c.login.Path, "/")
}

// allows reports whether a sign-in may send a request to u beyond the
// task's scope: the sign-in page's host, and the source's own host (a
// CAS service callback), both named by the approved task.
func (c *call) allows(u, src *url.URL) bool {
	if c == nil || c.login == nil || !c.signingIn {
		return false
	}
	return strings.EqualFold(u.Host, c.login.Host) || strings.EqualFold(u.Host, src.Host)
}

// cookieHeader is the Cookie header for a request to u.
func (c *call) cookieHeader(u, src *url.URL) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.cookie != "" && sameOrigin(u, src) {
		parts = append(parts, c.cookie)
	}
	if c.jar != nil {
		if h := c.jar.header(u); h != "" {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, "; ")
}

// newCall prepares the signing-in of one Fetch: the cookie to send and
// the kept session, read from the Session.
func (s *Source) newCall(ctx context.Context) (*call, error) {
	a := s.spec.Auth
	if a == nil {
		return nil, nil
	}
	c := &call{cookie: a.Cookie}
	if c.cookie == "" && a.Login == nil && s.o.Cookie != nil {
		ck, err := s.o.Cookie(ctx)
		if err != nil {
			return nil, err
		}
		c.cookie = ck
	}
	if a.Login == nil {
		return c, nil
	}
	c.login, _ = url.Parse(a.Login.URL) // checked by New
	state := ""
	if s.o.Session != nil {
		st, err := s.o.Session.Load(ctx)
		if err != nil {
			return nil, watch.Errorf(watch.Transient, "the credential store did not answer")
		}
		state = st
	}
	now := time.Now
	if s.o.Now != nil {
		now = s.o.Now
	}
	c.jar = decodeJar(state, now)
	return c, nil
}

// readSignedIn reads the source with read, signing in first when no
// session is kept and again, once, when the site shows that the session
// has expired (a redirect to the sign-in page, 401, or the check
// failing). At most one sign-in per run; a second failure is auth.
func (s *Source) readSignedIn(ctx, parent context.Context, c *call, read func() (*document, error)) (*document, error) {
	if c == nil || c.jar == nil {
		return read()
	}
	signed := false
	if c.jar.empty() {
		if err := s.signIn(ctx, parent, c); err != nil {
			return nil, err
		}
		signed = true
	}
	for {
		doc, err := read()
		if !s.signedOut(doc, err, c) {
			if err == nil {
				s.keep(ctx, c)
			}
			return doc, err
		}
		if signed {
			return nil, watch.Errorf(watch.Auth, "%s still asks to sign in after signing in; check source.auth.login", redact(s.u))
		}
		if err := s.signIn(ctx, parent, c); err != nil {
			return nil, err
		}
		signed = true
	}
}

// keep writes the session when the site changed its cookies. A store
// that does not answer costs a sign-in next run, not this run.
func (s *Source) keep(ctx context.Context, c *call) {
	if s.o.Session != nil && c.jar.dirty() {
		_ = s.o.Session.Save(ctx, c.jar.encode())
	}
}

// signedOut reports whether a read found the session expired.
func (s *Source) signedOut(doc *document, err error, c *call) bool {
	if err != nil {
		return errors.Is(err, errSignedOut) || watch.ClassOf(err) == watch.Auth
	}
	if doc.notModified {
		return false
	}
	if c.atLogin(doc.url, s.u) {
		return true
	}
	check := s.spec.Auth.Login.Check
	if check != "" {
		if c.jar.has(check) && !s.loginPage(doc) {
			return false
		}
		sel, cerr := cascadia.Compile(check)
		return cerr != nil || !matches(doc, sel)
	}
	return s.loginPage(doc)
}

// loginPage reports whether doc is a sign-in page served where the list
// was expected: an HTML form with a password field, and nothing the
// watch's selector matches.
func (s *Source) loginPage(doc *document) bool {
	d := htmlDoc(doc)
	if d == nil || d.Find("form input[type=password]").Length() == 0 {
		return false
	}
	return s.selector == nil || d.FindMatcher(s.selector).Length() == 0
}

func matches(doc *document, sel cascadia.Selector) bool {
	d := htmlDoc(doc)
	return d != nil && d.FindMatcher(sel).Length() > 0
}

// htmlDoc parses doc when it looks like HTML; nil otherwise.
func htmlDoc(doc *document) *goquery.Document {
	if doc == nil || len(doc.body) == 0 {
		return nil
	}
	ct := strings.ToLower(doc.contentType)
	if !strings.Contains(ct, "html") && Detect(doc.contentType, doc.body) != KindHTML {
		return nil
	}
	r, err := charset.NewReader(bytes.NewReader(doc.body), doc.contentType)
	if err != nil {
		return nil
	}
	d, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return nil
	}
	return d
}

// signIn opens the sign-in page, fills in its form (hidden fields such
// as CAS's execution and lt kept as served) and sends it, following the
// redirects back to the site; every answer's cookies go to the session.
// A site that answers with its sign-in form again refused the sign-in.
func (s *Source) signIn(ctx, parent context.Context, c *call) error {
	c.signingIn = true
	defer func() { c.signingIn = false }()
	page, err := s.follow(ctx, parent, kind.Request{URL: c.login}, watch.Conditional{}, c)
	if err != nil {
		return err
	}
	action, form, ok := loginForm(page, s.spec.Auth.Login.Form)
	if !ok {
		// No form: a single sign-on session still held signed the
		// site in on the way (CAS redirects straight to the service).
		s.keep(ctx, c)
		return nil
	}
	if !s.inScope(action) && !c.allows(action, s.u) {
		return watch.Errorf(watch.Scope, "the sign-in form of %s posts to %s, outside the approved scope", redact(c.login), action.Hostname())
	}
	done, err := s.follow(ctx, parent, kind.Request{Method: http.MethodPost, URL: action, Form: form}, watch.Conditional{}, c)
	if err != nil {
		if watch.ClassOf(err) == watch.Auth {
			return watch.Errorf(watch.Auth, "%s refused the sign-in; check the username and password", redact(action))
		}
		return err
	}
	if d := htmlDoc(done); d != nil && d.Find("form input[type=password]").Length() > 0 {
		return watch.Errorf(watch.Auth, "%s refused the sign-in; check the username and password", redact(action))
	}
	s.keep(ctx, c)
	return nil
}

// loginForm finds the sign-in form of page (the one with a password
// field) and the values it sends: its fields as served, then fill.
func loginForm(page *document, fill map[string]string) (*url.URL, url.Values, bool) {
	d := htmlDoc(page)
	if d == nil {
		return nil, nil, false
	}
	f := d.Find("form").FilterFunction(func(_ int, f *goquery.Selection) bool {
		return f.Find("input[type=password]").Length() > 0
	}).First()
	if f.Length() == 0 {
		return nil, nil, false
	}
	vals := url.Values{}
	f.Find("input[name], select[name], textarea[name]").Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		typ := strings.ToLower(in.AttrOr("type", "text"))
		switch {
		case goquery.NodeName(in) == "textarea":
			vals.Add(name, in.Text())
		case goquery.NodeName(in) == "select":
			opt := in.Find("option[selected]").First()
			if opt.Length() == 0 {
				opt = in.Find("option").First()
			}
			vals.Add(name, opt.AttrOr("value", opt.Text()))
		case typ == "submit" || typ == "button" || typ == "image" || typ == "reset" || typ == "file":
		case (typ == "checkbox" || typ == "radio") && !in.Is("[checked]"):
		default:
			vals.Add(name, in.AttrOr("value", ""))
		}
	})
	for k, v := range fill {
		vals.Set(k, v)
	}
	base := page.url
	action := base
	if a, ok := f.Attr("action"); ok && strings.TrimSpace(a) != "" {
		u, err := base.Parse(strings.TrimSpace(a))
		if err != nil {
			return nil, nil, false
		}
		action = u
	}
	return action, vals, true
}
