package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/tasks"
)

func adminServer(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, serverConfig{})
	ts.admin.Register("echo", func(_ context.Context, in json.RawMessage) (any, error) { return in, nil })
	ts.admin.Register("missing", func(context.Context, json.RawMessage) (any, error) {
		return nil, fmt.Errorf("show task: %w", tasks.ErrNotFound)
	})
	ts.admin.Register("bad", func(context.Context, json.RawMessage) (any, error) { return nil, BadInput("name is required") })
	return ts
}

func bearer(tok string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	h.Set("Content-Type", "application/json")
	return h
}

func TestAdminAPI(t *testing.T) {
	ts := adminServer(t)
	withOrigin := bearer(adminToken)
	withOrigin.Set("Origin", "http://evil.example")
	textPlain := bearer(adminToken)
	textPlain.Set("Content-Type", "text/plain")
	cases := []struct {
		name   string
		method string
		op     string
		header http.Header
		body   []byte
		status int
		code   string
	}{
		{"ok", "POST", "echo", bearer(adminToken), []byte(`{"a":1}`), 200, ""},
		{"empty body is {}", "POST", "echo", bearer(adminToken), nil, 200, ""},
		{"no token", "POST", "echo", http.Header{"Content-Type": {"application/json"}}, []byte(`{}`), 401, "unauthorized"},
		{"wrong token", "POST", "echo", bearer(adminToken + "0"), []byte(`{}`), 401, "unauthorized"},
		{"token prefix", "POST", "echo", bearer(adminToken[:10]), []byte(`{}`), 401, "unauthorized"},
		{"basic auth", "POST", "echo", http.Header{"Authorization": {"Basic " + adminToken}}, []byte(`{}`), 401, "unauthorized"},
		{"browser origin", "POST", "echo", withOrigin, []byte(`{}`), 403, "origin"},
		{"GET", "GET", "echo", bearer(adminToken), nil, 405, "method_not_allowed"},
		{"unknown op", "POST", "nope", bearer(adminToken), []byte(`{}`), 404, "not_found"},
		{"oversized body", "POST", "echo", bearer(adminToken), jsonOfSize(t, MaxAdminBody+1), 413, "too_large"},
		{"not JSON", "POST", "echo", bearer(adminToken), []byte(`{"a":`), 400, "bad_json"},
		{"not application/json", "POST", "echo", textPlain, []byte(`{}`), 415, "content_type"},
		{"manager not found", "POST", "missing", bearer(adminToken), []byte(`{}`), 404, "not_found"},
		{"bad input", "POST", "bad", bearer(adminToken), []byte(`{}`), 400, "bad_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ts.do(tc.method, "/admin/v1/"+tc.op, tc.header, tc.body)
			if res.status != tc.status || res.code() != tc.code {
				t.Errorf("status %d code %q, want %d %q (%s)", res.status, res.code(), tc.status, tc.code, res.raw)
			}
		})
	}
	res := ts.do("POST", "/admin/v1/echo", bearer(adminToken), []byte(`{"a":1}`))
	if res.body["ok"] != true || fmt.Sprint(res.body["result"]) != "map[a:1]" {
		t.Errorf("echo: %s", res.raw)
	}
	if res := ts.do("GET", "/admin/v1/echo", bearer(adminToken), nil); res.header.Get("Allow") != "POST" {
		t.Errorf("405 without Allow: POST")
	}
	assertNoSecrets(t, ts.logs.String())
}

// The admin API refuses peers that are not loopback, whatever they send.
func TestAdminRefusesRemotePeers(t *testing.T) {
	ts := adminServer(t)
	handler := ts.srv.srv.Handler
	for _, addr := range []string{"203.0.113.7:40000", "10.0.0.2:5555", "[2001:db8::1]:443", "192.168.1.10:8080"} {
		req := httptest.NewRequest("POST", "/admin/v1/echo", bytes.NewReader([]byte(`{}`)))
		req.RemoteAddr = addr
		req.Header = bearer(adminToken)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "not_loopback") {
			t.Errorf("%s: %d %s", addr, rec.Code, rec.Body)
		}
	}
	for _, addr := range []string{"127.0.0.1:40000", "[::1]:40000"} {
		req := httptest.NewRequest("POST", "/admin/v1/echo", bytes.NewReader([]byte(`{}`)))
		req.RemoteAddr = addr
		req.Header = bearer(adminToken)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", addr, rec.Code, rec.Body)
		}
	}
	// A stricter Peer policy applies over the real listener too.
	ts.admin.Peer = func(string) bool { return false }
	if res := ts.do("POST", "/admin/v1/echo", bearer(adminToken), []byte(`{}`)); res.status != http.StatusForbidden {
		t.Errorf("refused peer over TCP: %d", res.status)
	}
}

func TestIsLoopbackPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1": true, "127.3.2.1:80": true, "[::1]:9": true, "::1": true, "127.0.0.1": true,
		"10.0.0.1:1": false, "[::ffff:10.0.0.1]:1": false, "0.0.0.0:80": false, "localhost:80": false, "": false, "garbage": false,
	} {
		if got := IsLoopbackPeer(addr); got != want {
			t.Errorf("IsLoopbackPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}

// An admin API without a token refuses everyone.
func TestAdminWithoutTokenRefusesAll(t *testing.T) {
	a := NewAdmin("")
	a.Register("echo", func(_ context.Context, in json.RawMessage) (any, error) { return in, nil })
	s := New(Options{})
	s.Handle("/admin/v1/{op}", a.ServeHTTP)
	for _, h := range []http.Header{{}, {"Authorization": {"Bearer "}}} {
		req := httptest.NewRequest("POST", "/admin/v1/echo", strings.NewReader(`{}`))
		req.RemoteAddr = "127.0.0.1:1234"
		req.Header = h
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%v: %d", h, rec.Code)
		}
	}
}
