package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
)

// openBolt opens a fresh bbolt store, closed when the test ends.
func openBolt(t *testing.T) *bolt.Store {
	t.Helper()
	bs, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	return bs
}

// startDispatcher runs a dispatcher with o (worker "w1", a quick poll)
// until the test ends.
func startDispatcher(t *testing.T, o delivery.Options) (*delivery.Dispatcher, context.Context) {
	t.Helper()
	o.Worker, o.Poll, o.Log = "w1", 5*time.Millisecond, zerolog.Nop()
	d, err := delivery.NewDispatcher(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return d, ctx
}

// runningDispatcher starts a dispatcher with workers slots for hand-offs
// and waits until it takes them.
func runningDispatcher(t *testing.T, workers int) (*delivery.Dispatcher, context.Context) {
	t.Helper()
	d, ctx := startDispatcher(t, delivery.Options{Ledger: openBolt(t).Ledger(),
		Router: webhookRoute(t, newReceiver(t, nil), false), Workers: workers})
	waitForHandoffs(t, ctx, d)
	return d, ctx
}

// waitForHandoffs waits until a running dispatcher takes hand-offs.
func waitForHandoffs(t *testing.T, ctx context.Context, d *delivery.Dispatcher) {
	t.Helper()
	waitFor(t, func() bool {
		_, release, ok := d.Reserve(ctx, "ops", "hook:ci")
		if ok {
			release()
		}
		return ok
	}, "the dispatcher to take hand-offs")
}

// A sender that finds every worker busy waits a moment for one rather
// than being queued at once: a worker freed meanwhile takes its push.
func TestReserveWaitsBrieflyForABusyWorkerToFree(t *testing.T) {
	d, ctx := runningDispatcher(t, 1)
	_, release, ok := d.Reserve(ctx, "ops", "hook:ci")
	if !ok {
		t.Fatal("the only worker was not offered")
	}
	go func() {
		time.Sleep(5 * time.Millisecond) // well inside the wait, long enough that the sender is waiting
		release()
	}()
	_, release2, ok := d.Reserve(ctx, "ops", "hook:ci")
	if !ok {
		t.Fatal("the worker freed while the sender waited was not offered to it")
	}
	release2()
}

// A worker that stays busy is not waited for long: the push is queued.
func TestReserveDeclinesWhenNoWorkerFreesUp(t *testing.T) {
	d, ctx := runningDispatcher(t, 1)
	_, release, ok := d.Reserve(ctx, "ops", "hook:ci")
	if !ok {
		t.Fatal("the only worker was not offered")
	}
	defer release()
	if _, _, ok := d.Reserve(ctx, "ops", "hook:ci"); ok {
		t.Fatal("a busy worker was offered twice")
	}
	// The sender's own deadline ends the wait too.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, ok := d.Reserve(short, "ops", "hook:ci"); ok {
		t.Fatal("a busy worker was offered to a sender that had given up")
	}
}

// handOver claims one inbound push to "ops" in flight for d's worker, as
// an admission does after Reserve, and hands it over; it returns when
// Handoff does.
func handOver(t *testing.T, ctx context.Context, d *delivery.Dispatcher, l store.Ledger, key string) {
	t.Helper()
	_, release, ok := d.Reserve(ctx, "ops", "hook:ci")
	if !ok {
		t.Fatal("no worker offered")
	}
	msg := inbound("Build failed")
	payload, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	fx := store.Effect{Key: key, TaskID: "hook:ci", Recipient: "ops", Kind: msg.Kind, Payload: payload,
		State: store.Pending, NotBefore: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if _, err := l.Commit(ctx, store.RunCommit{TaskID: "hook:ci", Effects: []store.Effect{fx}, Worker: "w1"}); err != nil {
		release()
		t.Fatal(err)
	}
	fx.InFlight, fx.Worker = true, "w1"
	fx.Attempts = []store.Attempt{{N: 1, Start: now, By: "w1", Outcome: store.Pending}}
	d.Handoff([]store.Effect{fx}, msg, release)
}

// gatedHandoff hands one push over, in the background, to a running
// dispatcher whose recipient holds every request until answer is called.
// It returns when the request arrived, when Handoff returned, and the
// ledger.
func gatedHandoff(t *testing.T, key string) (arrived, returned <-chan struct{}, answer func(), l store.Ledger) {
	in, hold, out := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	rv := newReceiver(t, func(int, http.ResponseWriter) bool {
		in <- struct{}{}
		<-hold
		return true
	})
	bs := openBolt(t)
	d, ctx := startDispatcher(t, delivery.Options{Ledger: bs.Ledger(), Router: webhookRoute(t, rv, false), Workers: 2})
	waitForHandoffs(t, ctx, d)
	answer = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(answer) // first: the send ends before the dispatcher stops
	go func() { handOver(t, ctx, d, bs.Ledger(), key); close(out) }()
	return in, out, answer, bs.Ledger()
}

// An inbound hook answers its sender after the hand-off: Handoff returns
// once the recipient has answered the push, so a sender that waits for
// its answer is paced by the recipient instead of filling a queue.
func TestHandoffReturnsOnceTheRecipientAnswered(t *testing.T) {
	defer delivery.SetHandoffLinger(time.Minute)()
	arrived, returned, answer, _ := gatedHandoff(t, "fx_handed")
	<-arrived
	select {
	case <-returned:
		t.Fatal("Handoff returned before the recipient answered")
	case <-time.After(20 * time.Millisecond):
	}
	answer()
	<-returned
}

// A recipient that is slow to answer delays Handoff by handoffLinger at
// most; the push is still sent and settled in the background.
func TestHandoffWaitsForASlowRecipientOnlyBriefly(t *testing.T) {
	defer delivery.SetHandoffLinger(10 * time.Millisecond)()
	_, returned, answer, l := gatedHandoff(t, "fx_slow")
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Handoff waited for a recipient that does not answer")
	}
	answer()
	waitFor(t, func() bool {
		fx, err := l.Get(context.Background(), "fx_slow")
		return err == nil && fx.State == store.Completed
	}, "the slow push to complete")
}
