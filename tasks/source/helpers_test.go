package source

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

// newTestServer starts a fake peer on 127.0.0.1.
func newTestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newTestServerTB is newTestServer for benchmarks; it returns the URL.
func newTestServerTB(tb testing.TB, h http.Handler) string {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// serveFile answers every request with the testdata file and content type.
func serveFile(t *testing.T, name, contentType string) *httptest.Server {
	t.Helper()
	body := readTestdata(t, name)
	return newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newTestSource builds a Source that may reach loopback test servers.
func newTestSource(t testing.TB, spec watch.Spec, o Options) *Source {
	t.Helper()
	o.AllowPrivate = true
	s, err := New(spec, o)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	return s
}

// trusted returns the exact address of srv, for sources that must reach it
// while every other private address stays blocked.
func trusted(t *testing.T, srv *httptest.Server) []netip.AddrPort {
	t.Helper()
	return []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}
}

func fetch(t testing.TB, s *Source) (watch.Result, error) {
	t.Helper()
	return s.Fetch(context.Background(), watch.Conditional{})
}

func mustFetch(t testing.TB, s *Source) watch.Result {
	t.Helper()
	res, err := fetch(t, s)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return res
}

// wantClass fails unless err is a *watch.Error of class c.
func wantClass(t *testing.T, err error, c watch.Class) {
	t.Helper()
	var we *watch.Error
	if !errors.As(err, &we) {
		t.Fatalf("err = %v (%T), want a *watch.Error of class %s", err, err, c)
	}
	if we.Class != c {
		t.Fatalf("class = %s (%v), want %s", we.Class, err, c)
	}
}

// allocated reports the bytes allocated while f runs: an upper bound on
// the memory f can have held at any time.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func byID(items []watch.Item) map[string]watch.Item {
	m := make(map[string]watch.Item, len(items))
	for _, it := range items {
		m[it.ID] = it
	}
	return m
}
