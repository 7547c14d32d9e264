package source

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestRefusedSourceSaysWhatAndWhy: a local source refused by the guard
// names the host, the kind of address and the setting that allows it —
// not the port it happens to listen on.
func TestRefusedSourceSaysWhatAndWhy(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metadata" {
			http.Redirect(w, r, "http://169.254.169.254/latest/", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, smallRSS)
	}))
	u, _ := url.Parse(srv.URL)
	for raw, want := range map[string]string{
		"http://127.0.0.1:" + u.Port() + "/feed": "127.0.0.1 is a loopback address; set policy.allow_private_networks for local sources",
		"http://localhost:" + u.Port() + "/feed": "localhost is a loopback address; set policy.allow_private_networks for local sources",
	} {
		s, err := New(watch.Spec{Kind: KindRSS, URL: raw}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = fetch(t, s)
		wantClass(t, err, watch.BlockedAddress)
		if !errors.Is(err, egress.ErrBlocked) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "port") {
			t.Errorf("GET %s: %v\nwant %q", raw, err, want)
		}
	}
	s, err := New(watch.Spec{Kind: KindRSS, URL: srv.URL + "/metadata"}, Options{Trusted: trusted(t, srv), Scope: func(*url.URL) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetch(t, s)
	if want := "169.254.169.254 is a link-local address"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("redirect to metadata: %v, want %q", err, want)
	}
}
