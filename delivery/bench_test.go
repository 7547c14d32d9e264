package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
)

// BenchmarkClaimQueueWebhook measures the whole push path: a claim through
// the manager (Ledger.Commit), the durable queue, the dispatcher with its
// Begin/Settle records, the real webhook sink and a receiver on loopback.
// It reports effects per second and the latency from the claim to the
// receiver's receipt (p50, p99).
func BenchmarkClaimQueueWebhook(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync"
		if !fsync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) { benchClaimQueueWebhook(b, !fsync) })
	}
}

func benchClaimQueueWebhook(b *testing.B, noSync bool) {
	st, err := bolt.Open(filepath.Join(b.TempDir(), "herald.db"), bolt.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	var (
		mu      sync.Mutex
		arrived = map[string]time.Time{}
		all     = make(chan struct{})
	)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		mu.Lock()
		if _, dup := arrived[r.Header.Get("webhook-id")]; !dup {
			arrived[r.Header.Get("webhook-id")] = now
			if len(arrived) == b.N {
				close(all)
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	rv := &receiver{Server: srv}

	var d *delivery.Dispatcher
	eng, err := engine.New(engine.Options{
		Store: st, Holder: "bench", Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return nil, errors.New("no sources")
		}),
		WakeDelivery: func() { d.Wake() },
	})
	if err != nil {
		b.Fatal(err)
	}
	d, err = delivery.NewDispatcher(delivery.Options{Ledger: st.Ledger(), Router: webhookRoute(b, rv, false),
		Worker: "bench", Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	claimed := make([]time.Time, b.N)
	keys := make([]string, b.N)
	const admitters = 8
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range admitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += admitters {
				claimed[i] = time.Now()
				res, err := eng.Admitter.Admit(ctx, delivery.Admission{Source: "hook:bench", Identity: fmt.Sprintf("d-%d", i),
					Recipients: []string{"ops"}, Message: inbound("build")})
				if err != nil || len(res.Claimed) != 1 {
					b.Errorf("admit: %v", err)
					return
				}
				keys[i] = res.Claimed[0]
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatal("not every push arrived")
	}
	b.StopTimer()

	lat := make([]float64, b.N)
	mu.Lock()
	for i, k := range keys {
		lat[i] = float64(arrived[k].Sub(claimed[i]).Microseconds()) / 1000
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "effects/s")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-ms")
	b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/effect")
}
