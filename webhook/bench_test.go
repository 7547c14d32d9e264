package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	whsink "github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook/signature"
)

var eventID = regexp.MustCompile(`ev[0-9]+x`)

// BenchmarkHookToWebhookSink measures the whole inbound path as serve wires
// it: 32 concurrent senders POST signed events to /hooks/bench; each is
// verified, claimed durably (fsync) in flight for a free delivery worker,
// answered 202, handed over, signed again and pushed to a receiver on
// loopback, and its outcome recorded. It reports events per second and the
// latency from send to arrival (p50, p99), and fails on a duplicate.
func BenchmarkHookToWebhookSink(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as serve runs
	st, err := bolt.Open(filepath.Join(b.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()

	var (
		mu      sync.Mutex
		arrived = map[string]time.Time{}
		dups    int
		all     = make(chan struct{})
	)
	rv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(r.Body)
		id := string(eventID.Find(body)) // the default summary quotes the payload
		mu.Lock()
		if _, dup := arrived[id]; dup {
			dups++
		} else {
			arrived[id] = now
			if len(arrived) == b.N {
				close(all)
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rv.Close()
	sink, err := whsink.New("bench", rv.URL+"/in", stdSecret, false, egress.Options{AllowPrivate: true})
	if err != nil {
		b.Fatal(err)
	}
	table := delivery.NewTable(delivery.TableConfig{Named: map[string]delivery.Route{
		"bench": {Sink: sink, To: delivery.Address{Kind: delivery.Webhook, Name: "bench"}},
	}})

	var d *delivery.Dispatcher
	d, err = delivery.NewDispatcher(delivery.Options{Ledger: st.Ledger(), Router: table, Worker: "bench", Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Options{
		Store: st, Holder: "bench", Log: zerolog.Nop(), WakeDelivery: d.Wake, Direct: d,
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return nil, errors.New("no sources")
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { _ = d.Run(ctx); close(runDone) }()
	defer func() { cancel(); <-runDone }()

	// Every sender is one address here: give it the room a busy source
	// would be configured with (server.inbound_limits.per_client).
	srv := New(Options{Addr: "127.0.0.1:0", Inbound: InboundLimits{PerClient: 64}, Log: zerolog.Nop()})
	hooks := NewHooks(eng.Admitter, nil)
	if err := hooks.Set([]Hook{stdHook("bench", "bench")}); err != nil {
		b.Fatal(err)
	}
	srv.Handle("/hooks/{name}", hooks.ServeHTTP)
	if err := srv.Listen(); err != nil {
		b.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ctx, 5*time.Second) }()
	defer func() { cancel(); <-serveDone }()
	url := "http://" + srv.Addr() + "/hooks/bench"

	key, err := signature.ParseSecret(stdSecret)
	if err != nil {
		b.Fatal(err)
	}
	const senders = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	sent := make([]time.Time, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += senders {
				id := "ev" + strconv.Itoa(i) + "x"
				body := fmt.Appendf(nil, `{"title":%q}`, id)
				now := time.Now()
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("webhook-id", id)
				req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
				req.Header.Set("webhook-signature", signature.Sign(key, id, now, body))
				sent[i] = now
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				// Read to the end: a body closed unread takes its
				// connection with it, and every request would dial.
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusAccepted {
					b.Errorf("%s: status %d", id, res.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatal("not every event arrived")
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0

	mu.Lock()
	defer mu.Unlock()
	if dups > 0 {
		b.Fatalf("%d duplicates at the receiver", dups)
	}
	lat := make([]float64, b.N)
	for i := range b.N {
		lat[i] = float64(arrived["ev"+strconv.Itoa(i)+"x"].Sub(sent[i]).Microseconds()) / 1000
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-ms")
	// The process's CPU per event (senders and receiver included): unlike
	// events/s, it hardly moves with what else the machine is doing.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/event")
}

// cpuTime is the CPU the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
