package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook"
)

// rig is the console on a real listener over a real manager and store.
type rig struct {
	base     string
	manager  *tasks.Manager
	sessions *Sessions
	client   *http.Client
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng, err := engine.New(engine.Options{
		Store: st, Holder: "test", Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return nil, errors.New("no sources in these tests")
		}),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"}, Named: map[string]bool{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	sess := &Sessions{KV: st.Channels(), Dedup: st.Dedup()}
	o.Manager, o.Sessions = m, sess
	srv := webhook.New(webhook.Options{Addr: "127.0.0.1:0", Log: zerolog.Nop()})
	New(o).Mount(srv)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	jar, _ := cookiejar.New(nil)
	return &rig{base: "http://" + srv.Addr(), manager: m, sessions: sess, client: &http.Client{Jar: jar, Timeout: 5 * time.Second}}
}

func (r *rig) do(t *testing.T, method, path, origin, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func (r *rig) signIn(t *testing.T, principal string) {
	t.Helper()
	code, _, err := r.sessions.NewCode(context.Background(), principal, 0)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := r.do(t, http.MethodPost, "/console/api/login", r.base, `{"code":"`+code+`"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
}

func TestConsole_OnlyAdminsGetAndKeepASession(t *testing.T) {
	r := newRig(t, Options{})
	code, _, _ := r.sessions.NewCode(context.Background(), "console:bob", 0)
	if resp, body := r.do(t, http.MethodPost, "/console/api/login", r.base, `{"code":"`+code+`"}`); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not_admin") {
		t.Errorf("a non-admin's code: %d %s", resp.StatusCode, body)
	}
	r.signIn(t, "console:admin")
	if resp, body := r.do(t, http.MethodGet, "/console/api/attention", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("attention: %d %s", resp.StatusCode, body)
	}
	r.manager.SetPolicy(tasks.Policy{Admins: []string{"console:other"}})
	if resp, body := r.do(t, http.MethodGet, "/console/api/attention", "", ""); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not_admin") {
		t.Errorf("after leaving policy.admins: %d %s", resp.StatusCode, body)
	}
}

func TestConsole_PageHeadersAndMethods(t *testing.T) {
	r := newRig(t, Options{})
	for _, path := range []string{"/console", "/console/app.js", "/console/style.css"} {
		resp, _ := r.do(t, http.MethodGet, path, "", "")
		h := resp.Header
		if resp.StatusCode != http.StatusOK || h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, h)
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/console"}, {http.MethodGet, "/console/api/login"}, {http.MethodGet, "/console/api/approve"},
		{http.MethodPost, "/console/api/attention"},
	} {
		if resp, _ := r.do(t, c.method, c.path, r.base, ""); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", c.method, c.path, resp.StatusCode)
		}
	}
	if resp, _ := r.do(t, http.MethodGet, "/console/other.js", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown asset: %d", resp.StatusCode)
	}
	if resp, body := r.do(t, http.MethodGet, "/console/api/tasks", "", ""); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "signed_out") {
		t.Errorf("without a session: %d %s", resp.StatusCode, body)
	}
}

func TestConsole_CookieIsSecureBehindAnHTTPSPublicURL(t *testing.T) {
	r := newRig(t, Options{PublicURL: func() string { return "https://herald.example.com" }})
	code, _, _ := r.sessions.NewCode(context.Background(), "console:admin", 0)
	// Behind the proxy the browser's Origin is the public one.
	resp, body := r.do(t, http.MethodPost, "/console/api/login", "https://herald.example.com", `{"code":"`+code+`"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"Secure", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %s", ck, want)
		}
	}
}
