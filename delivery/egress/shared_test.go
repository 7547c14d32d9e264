package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Sinks are built per recipient, and built again on every reload: with
// the same guard they must reuse one another's kept connections rather
// than each dial its own.
func TestClientsWithTheSameOptionsShareKeptConnections(t *testing.T) {
	var (
		mu    sync.Mutex
		peers = map[string]bool{} // one remote address per connection
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
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
	if n := len(peers); n != 1 {
		t.Fatalf("three clients with the same options opened %d connections, want 1", n)
	}
	if SharedTransport(o) == SharedTransport(Options{AllowPrivate: false, UserAgent: "test"}) {
		t.Fatal("a stricter guard shares the private-network transport")
	}
}
