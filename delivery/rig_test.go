package delivery_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
	"github.com/herald-bridge/herald/webhook/signature"
)

// t0 is 23:00 UTC: inside the quiet hours the hold tests configure.
var t0 = time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)

const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// rig is a real bbolt store with the real task manager as the only
// admission path, a manual clock shared by both, and dispatchers started
// on demand.
type rig struct {
	t        testing.TB
	path     string
	clock    *tasks.ManualClock
	st       *bolt.Store
	m        *tasks.Manager
	admitter *delivery.Admitter
	ledger   *scanLedger
	wake     func()
	d        *delivery.Dispatcher // the last one started
	eng      *engine.Engine
	// source, when set, is what tasks read (order_run_test.go).
	source tasks.Source
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "herald.db"), clock: tasks.NewManualClock(t0)}
	r.open()
	return r
}

// open opens the store file and a manager over it (again after crash).
func (r *rig) open() {
	r.t.Helper()
	st, err := bolt.Open(r.path, bolt.Options{Now: r.clock.Now})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { st.Close() })
	r.st = st
	r.ledger = &scanLedger{Ledger: st.Ledger(), scanned: make(chan time.Time, 1)}
	eng, err := engine.New(engine.Options{
		Store: st, Clock: r.clock, Holder: "replica-a", Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			if r.source != nil {
				return r.source, nil
			}
			return nil, errors.New("no sources in delivery tests")
		}),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"},
			AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{"ops": true}},
		WakeDelivery: func() { r.wakeDispatcher() },
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.m, r.admitter, r.eng = eng.Catalog, eng.Admitter, eng
}

func (r *rig) wakeDispatcher() {
	if r.wake != nil {
		r.wake()
	}
}

// crash closes the store under whatever is running, as a killed process
// would leave it: nothing written after this point persists.
func (r *rig) crash() {
	r.t.Helper()
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// admit claims one push through admission and returns its effect key.
func (r *rig) admit(source, identity, recipient string, msg delivery.Message, ttl time.Duration) string {
	r.t.Helper()
	res, err := r.admitter.Admit(context.Background(), delivery.Admission{Source: source, Identity: identity,
		Recipients: []string{recipient}, Message: msg, TTL: ttl})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(res.Claimed) != 1 {
		r.t.Fatalf("admit %s/%s claimed %v", source, identity, res.Claimed)
	}
	return res.Claimed[0]
}

// start runs a dispatcher over the rig's ledger until the test ends or the
// returned stop is called.
func (r *rig) start(router delivery.Router, worker string, opt func(*delivery.Options)) (stop func()) {
	r.t.Helper()
	o := delivery.Options{Ledger: r.ledger, Router: router, Worker: worker, Workers: 4,
		Now: r.clock.Now, Poll: 5 * time.Millisecond, Log: zerolog.Nop(), Jitter: func() float64 { return 0 }}
	if opt != nil {
		opt(&o)
	}
	d, err := delivery.NewDispatcher(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.wake, r.d = d.Wake, d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done; r.wake = nil }) }
	r.t.Cleanup(stop)
	return stop
}

// advance moves the clock and waits until the dispatcher has looked at the
// queue as of the new time, so whatever it does not send now it has
// decided not to send.
func (r *rig) advance(d time.Duration) {
	r.t.Helper()
	r.clock.Advance(d)
	r.scannedAt(r.clock.Now())
}

// scannedAt waits for two dispatcher scans at or after at: the second one
// starts after everything the first found was handed to a worker.
func (r *rig) scannedAt(at time.Time) {
	r.t.Helper()
	for seen := 0; seen < 2; {
		select {
		case s := <-r.ledger.scanned:
			if !s.Before(at) {
				seen++
			}
		case <-time.After(10 * time.Second):
			r.t.Fatalf("the dispatcher did not look at the queue as of %s", at)
		}
	}
}

// effect reads one effect from the ledger.
func (r *rig) effect(key string) store.Effect {
	r.t.Helper()
	fx, err := r.st.Ledger().Get(context.Background(), key)
	if err != nil {
		r.t.Fatal(err)
	}
	return fx
}

// settled waits until key is no longer in flight and its state is want.
func (r *rig) settled(key string, want store.EffectState) store.Effect {
	r.t.Helper()
	var fx store.Effect
	waitFor(r.t, func() bool {
		fx = r.effect(key)
		return fx.State == want && !fx.InFlight
	}, "effect %s to end %s", key, want)
	return fx
}

// scanLedger is the real ledger, observed: it reports the time of every
// completed queue scan.
type scanLedger struct {
	store.Ledger
	scanned chan time.Time
	// beforeBegin, when set, runs before each Begin; an error stands for
	// the process stopping right there.
	beforeBegin func(key string) error
}

func (l *scanLedger) Begin(ctx context.Context, key, worker string, seen int, now time.Time) (store.Effect, error) {
	if l.beforeBegin != nil {
		if err := l.beforeBegin(key); err != nil {
			return store.Effect{}, err
		}
	}
	return l.Ledger.Begin(ctx, key, worker, seen, now)
}

func (l *scanLedger) Due(ctx context.Context, now time.Time, limit int) ([]store.Effect, error) {
	fxs, err := l.Ledger.Due(ctx, now, limit)
	select {
	case l.scanned <- now:
	default:
	}
	return fxs, err
}

// waitFor polls cond until it holds: it waits for completion, it never
// measures time.
func waitFor(t testing.TB, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+what, args...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hit is one request a fake webhook receiver accepted.
type hit struct {
	ID   string
	Body []byte
	At   time.Time // wall clock at receipt
}

// receiver is a fake Standard Webhooks endpoint: it verifies every
// signature and records each request, then answers as the test says.
type receiver struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	hits   []hit
	answer func(n int, w http.ResponseWriter) bool // false: it answered (or dropped) the request itself
}

func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter) bool) *receiver {
	t.Helper()
	key, err := signature.ParseSecret(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	rv := &receiver{t: t, answer: answer}
	rv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("receiver: read body: %v", err)
			return
		}
		id := r.Header.Get("webhook-id")
		if err := signature.Verify([][]byte{key}, id, r.Header.Get("webhook-timestamp"),
			r.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("receiver: signature of %s: %v", id, err)
		}
		rv.mu.Lock()
		rv.hits = append(rv.hits, hit{ID: id, Body: body, At: time.Now()})
		n := len(rv.hits)
		rv.mu.Unlock()
		if rv.answer != nil && !rv.answer(n, w) {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rv.Close)
	return rv
}

func (rv *receiver) received() []hit {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]hit(nil), rv.hits...)
}

// tooManyRequests answers the first requests (first of them; every one
// when first < 0) 429 with Retry-After, and the rest 204.
func tooManyRequests(retryAfter string, first int) func(n int, w http.ResponseWriter) bool {
	return func(n int, w http.ResponseWriter) bool {
		if first >= 0 && n > first {
			return true
		}
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusTooManyRequests)
		return false
	}
}

// dropConnection reads nothing more and closes the connection without an
// answer: the request arrived, the sender cannot know it.
func dropConnection(t testing.TB, w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_ = conn.Close()
}

// webhookRoute is a Table with one named webhook recipient "ops" pointing
// at rv through the real webhook sink.
func webhookRoute(t testing.TB, rv *receiver, idempotent bool) *delivery.Table {
	t.Helper()
	return routeTo(webhookSink(t, rv, idempotent))
}

// scheduledRoute is webhookRoute for an idempotent recipient retried on
// schedule (SPEC §21).
func scheduledRoute(t testing.TB, rv *receiver, schedule ...time.Duration) *delivery.Table {
	t.Helper()
	return routeTo(webhookSink(t, rv, true).WithPolicy(delivery.RetryPolicy{Schedule: schedule, DisableAfter: webhook.DefaultDisableAfter}))
}

// webhookSink is the real webhook sink for recipient "ops" at rv.
func webhookSink(t testing.TB, rv *receiver, idempotent bool) *webhook.Sink {
	t.Helper()
	sink, err := webhook.New("ops", rv.URL+"/herald", hookSecret, idempotent, egress.Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	return sink
}

// routeTo is a Table whose one named recipient "ops" is sink.
func routeTo(sink delivery.Sink) *delivery.Table {
	return delivery.NewTable(delivery.TableConfig{Named: map[string]delivery.Route{
		"ops": {Sink: sink, To: delivery.Address{Kind: delivery.Webhook, Name: "ops"}},
	}})
}

// inbound is a push that is sent on its own (not grouped).
func inbound(title string) delivery.Message {
	return delivery.Message{Kind: delivery.KindInbound, Title: title, Text: title + " happened"}
}
