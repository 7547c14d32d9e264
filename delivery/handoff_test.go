package delivery_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
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
