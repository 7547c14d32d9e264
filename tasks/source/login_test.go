package source

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/herald-bridge/herald/tasks/source/portaltest"
	"github.com/herald-bridge/herald/tasks/watch"
)

// memSession is a Session kept in memory, standing for the credential
// store between runs.
type memSession struct {
	mu    sync.Mutex
	state string
	saves int
}

func (m *memSession) Load(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, nil
}

func (m *memSession) Save(_ context.Context, s string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state, m.saves = s, m.saves+1
	return nil
}

var _ Session = (*memSession)(nil)

func loginSpec(p *portaltest.Portal, password, check string) watch.Spec {
	return watch.Spec{Kind: KindHTML, URL: p.URL + "/portal/notices", Selector: "li.notice",
		Auth: &watch.SignIn{Login: &watch.Login{URL: p.LoginURL(), Check: check,
			Form: map[string]string{"username": portaltest.Account, "password": password}}}}
}

func TestLogin_SignsInThroughCASHiddenFieldsAndKeepsTheSession(t *testing.T) {
	for _, check := range []string{"", "PORTALSESSION", "div.user"} {
		t.Run("check="+check, func(t *testing.T) {
			p := portaltest.New("选课通知", "考试安排")
			defer p.Close()
			sess := &memSession{}
			open := func() *Source {
				return newTestSource(t, loginSpec(p, portaltest.Password, check), Options{AllowPrivate: true, Session: sess})
			}
			res := mustFetch(t, open())
			if len(res.Items) != 2 {
				t.Fatalf("items = %+v", res.Items)
			}
			// A later run (or a restarted herald) reuses the kept session.
			mustFetch(t, open())
			if posts, logins := p.Posts(); posts != 1 || logins != 1 {
				t.Fatalf("sign-in forms %d, sign-ins %d; want one of each", posts, logins)
			}
			if strings.Contains(sess.state, portaltest.Password) || !strings.Contains(sess.state, "PORTALSESSION") {
				t.Fatalf("kept session %q: want the portal's cookie and no password", sess.state)
			}
			// The session expires: the next run signs in again, once.
			p.Expire()
			p.Add("放假通知")
			res = mustFetch(t, open())
			if len(res.Items) != 3 {
				t.Fatalf("after expiry items = %d", len(res.Items))
			}
			if posts, _ := p.Posts(); posts != 2 {
				t.Fatalf("sign-in forms after expiry = %d, want 2", posts)
			}
		})
	}
}

func TestLogin_A401SignsInAgainOnce(t *testing.T) {
	p := portaltest.New("选课通知")
	defer p.Close()
	spec := loginSpec(p, portaltest.Password, "")
	spec.URL = p.URL + "/portal/strict/notices"
	sess := &memSession{}
	open := func() *Source { return newTestSource(t, spec, Options{Session: sess}) }
	mustFetch(t, open())
	mustFetch(t, open())
	p.Expire()
	if res := mustFetch(t, open()); len(res.Items) != 1 {
		t.Fatalf("items after a 401 = %+v", res.Items)
	}
	if posts, _ := p.Posts(); posts != 2 {
		t.Fatalf("sign-in forms = %d, want 2: one at first, one after the 401", posts)
	}
}

func TestLogin_WrongPasswordIsAuthAfterOneAttempt(t *testing.T) {
	p := portaltest.New("选课通知")
	defer p.Close()
	s := newTestSource(t, loginSpec(p, "wrong-password", ""), Options{AllowPrivate: true, Session: &memSession{}})
	_, err := fetch(t, s)
	wantClass(t, err, watch.Auth)
	if posts, _ := p.Posts(); posts != 1 {
		t.Fatalf("sign-in forms = %d, want 1", posts)
	}
	if strings.Contains(err.Error(), "wrong-password") || strings.Contains(err.Error(), portaltest.Account) {
		t.Fatalf("error shows a secret: %v", err)
	}
}

func TestLogin_StaleSessionAndWrongPasswordSignsInOnlyOncePerRun(t *testing.T) {
	p := portaltest.New("选课通知")
	defer p.Close()
	sess := &memSession{}
	mustFetch(t, newTestSource(t, loginSpec(p, portaltest.Password, ""), Options{AllowPrivate: true, Session: sess}))
	p.Expire()
	_, err := fetch(t, newTestSource(t, loginSpec(p, "changed", ""), Options{AllowPrivate: true, Session: sess}))
	wantClass(t, err, watch.Auth)
	if posts, _ := p.Posts(); posts != 2 {
		t.Fatalf("sign-in forms = %d, want 2 (one per run)", posts)
	}
}

func TestLoginPageWhereTheListWasIsAuth(t *testing.T) {
	p := portaltest.New("选课通知", "考试安排")
	defer p.Close()
	// Without the cookie the portal serves its sign-in page with 200.
	spec := watch.Spec{Kind: KindHTML, URL: p.URL + "/portal/cookie/notices", Selector: "li.notice"}
	_, err := fetch(t, newTestSource(t, spec, Options{AllowPrivate: true}))
	wantClass(t, err, watch.Auth)
	// Nor with a guessed selector.
	spec.Selector, spec.Kind = "", ""
	_, err = fetch(t, newTestSource(t, spec, Options{AllowPrivate: true}))
	wantClass(t, err, watch.Auth)
}

func TestCookieAuth_SendsTheCookieOnlyToTheSourceAndNeverShowsIt(t *testing.T) {
	p := portaltest.New("选课通知", "考试安排")
	defer p.Close()
	spec := watch.Spec{Kind: KindHTML, URL: p.URL + "/portal/cookie/notices", Selector: "li.notice",
		Auth: &watch.SignIn{Cookie: portaltest.Cookie}}
	res := mustFetch(t, newTestSource(t, spec, Options{AllowPrivate: true}))
	if len(res.Items) != 2 {
		t.Fatalf("items = %+v", res.Items)
	}
	// From chat: the cookie is asked for at each run.
	spec.Auth.Cookie = ""
	asked := 0
	res = mustFetch(t, newTestSource(t, spec, Options{AllowPrivate: true, Cookie: func(context.Context) (string, error) {
		asked++
		return portaltest.Cookie, nil
	}}))
	if len(res.Items) != 2 || asked != 1 {
		t.Fatalf("items %d, asked %d", len(res.Items), asked)
	}
	// A cookie the portal no longer takes is auth, and the error does
	// not carry it.
	spec.Auth.Cookie = "portal_token=expired-value"
	_, err := fetch(t, newTestSource(t, spec, Options{AllowPrivate: true}))
	wantClass(t, err, watch.Auth)
	if strings.Contains(err.Error(), "expired-value") {
		t.Fatalf("error shows the cookie: %v", err)
	}
}

func TestAuthSpecChecks(t *testing.T) {
	for name, spec := range map[string]watch.Spec{
		"cookie and login": {URL: "https://p.example.edu/", Auth: &watch.SignIn{Cookie: "a=b", Login: &watch.Login{URL: "https://p.example.edu/login"}}},
		"login url":        {URL: "https://p.example.edu/", Auth: &watch.SignIn{Login: &watch.Login{URL: "ftp://x"}}},
		"cookie newline":   {URL: "https://p.example.edu/", Auth: &watch.SignIn{Cookie: "a=b\r\nX: y"}},
		"render word":      {URL: "https://p.example.edu/", Render: "chrome"},
		"render of a feed": {URL: "https://p.example.edu/", Kind: KindRSS, Render: watch.RenderBrowser},
	} {
		if _, err := New(spec, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "a=b") {
			t.Errorf("%s: error shows the cookie: %v", name, err)
		}
	}
}
