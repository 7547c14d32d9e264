package source

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Every run builds its Source anew; the sources share pooled clients, so
// twenty runs of twenty tasks on one site use one kept-alive connection
// rather than twenty, each left idle behind them (I7: the cost of a
// check does not grow with the number of tasks).
func TestI7_SourcesShareAPooledClient(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, smallRSS)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	for i := range 20 {
		s := newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL + "/feed"}, Options{})
		res, err := s.Fetch(context.Background(), watch.Conditional{})
		if err != nil || len(res.Items) != 2 {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 sequential runs opened %d connections, want 1 (a pooled client)", n)
	}
}
