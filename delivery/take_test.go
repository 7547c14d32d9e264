package delivery_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// lateReadLedger makes the dispatcher's second read of the queue see a
// push as still due while a worker has it (the read starts before the
// worker's Begin), and hands that read back only after the worker has
// settled the push and given it back.
type lateReadLedger struct {
	store.Ledger
	reads      atomic.Int32
	secondRead chan struct{} // closed when the second read has read
	settled    chan struct{} // closed when the first outcome is stored
	once       sync.Once
}

func (l *lateReadLedger) Due(ctx context.Context, now time.Time, limit int) ([]store.Effect, error) {
	fxs, err := l.Ledger.Due(ctx, now, limit)
	if l.reads.Add(1) == 2 {
		close(l.secondRead)
		<-l.settled
		time.Sleep(20 * time.Millisecond) // the worker gives the push back just after its outcome
	}
	return fxs, err
}

func (l *lateReadLedger) Begin(ctx context.Context, key, worker string, seen int, now time.Time) (store.Effect, error) {
	<-l.secondRead
	return l.Ledger.Begin(ctx, key, worker, seen, now)
}

func (l *lateReadLedger) Settle(ctx context.Context, key string, o store.Outcome, now time.Time) (store.Effect, error) {
	e, err := l.Ledger.Settle(ctx, key, o, now)
	l.once.Do(func() { close(l.settled) })
	return e, err
}

// A read of the queue that began before a worker's outcome must not send
// the push again on the strength of what it read: a receiver that asked
// for an hour's wait gets one request, not a second one at once.
func TestQueueReadOlderThanAWorkersOutcomeSendsNothingAgain(t *testing.T) {
	bs := openBolt(t)
	rv := newReceiver(t, tooManyRequests("3600", -1))
	payload, err := json.Marshal(inbound("deploy"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := bs.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "hook:ci", Effects: []store.Effect{{
		Key: "k-late", TaskID: "hook:ci", Recipient: "ops", Kind: delivery.KindInbound, Payload: payload,
		State: store.Pending, NotBefore: now, ExpiresAt: now.Add(24 * time.Hour), CreatedAt: now, UpdatedAt: now,
	}}}); err != nil {
		t.Fatal(err)
	}
	l := &lateReadLedger{Ledger: bs.Ledger(), secondRead: make(chan struct{}), settled: make(chan struct{})}
	startDispatcher(t, delivery.Options{Ledger: l, Router: webhookRoute(t, rv, false), Workers: 2})
	ctx := context.Background()

	waitFor(t, func() bool {
		fx, err := bs.Ledger().Get(ctx, "k-late")
		return err == nil && len(fx.Attempts) >= 1 && !fx.InFlight
	}, "the first attempt's outcome")
	waitFor(t, func() bool { return l.reads.Load() >= 3 }, "a read of the queue after the late one")
	time.Sleep(50 * time.Millisecond) // a second send would be under way by now; not a timing assertion
	if hits := rv.received(); len(hits) != 1 {
		t.Fatalf("receiver saw %d requests, want 1: the push is due again in an hour", len(hits))
	}
}
