package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Sinks are built per recipient, and built again on every reload: with
// the same guard they must reuse one another's kept connections rather
// than each dial its own.
func TestClientsWithTheSameOptionsShareKeptConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	o := Options{AllowPrivate: true, UserAgent: "test"}
	for i := range 3 {
		resp, err := Client(o).Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("three clients with the same options opened %d connections, want 1", n)
	}
	if SharedTransport(o) == SharedTransport(Options{AllowPrivate: false, UserAgent: "test"}) {
		t.Fatal("a stricter guard shares the private-network transport")
	}
}
