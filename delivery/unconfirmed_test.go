package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// lossyStore stores every commit but, while lose is set, answers the
// commit (and reads) as if the connection broke: the write happened, the
// caller cannot know it.
type lossyStore struct {
	store.Store
	lose     atomic.Bool
	getFails atomic.Int32 // further reads refused as unavailable
}

func (s *lossyStore) Ledger() store.Ledger { return lossyLedger{s.Store.Ledger(), s} }

type lossyLedger struct {
	store.Ledger
	s *lossyStore
}

var errLostAnswer = fmt.Errorf("answer lost: %w", store.ErrUnavailable)

func (l lossyLedger) Commit(ctx context.Context, c store.RunCommit) (store.CommitResult, error) {
	res, err := l.Ledger.Commit(ctx, c)
	if err == nil && l.s.lose.Load() {
		return store.CommitResult{}, errLostAnswer
	}
	return res, err
}

func (l lossyLedger) Get(ctx context.Context, key string) (store.Effect, error) {
	if l.s.getFails.Add(-1) >= 0 {
		return store.Effect{}, errLostAnswer
	}
	return l.Ledger.Get(ctx, key)
}

// An inbound push claimed in flight for a free worker whose commit answer
// was lost (the claim stored, the caller told "unavailable") must not sit
// in flight forever for a live worker: it was never handed over, so it is
// provably unsent and goes back to the queue, and is delivered once (I1,
// I3). The sender's retry of the same delivery then pushes nothing more.
func TestI1_HandoffWhoseCommitAnswerWasLostIsDeliveredOnce(t *testing.T) {
	bs := openBolt(t) // closed after the dispatcher stops
	st := &lossyStore{Store: bs}
	st.getFails.Store(2) // the store is still away for the first checks
	rv := newReceiver(t, nil)

	d, ctx := startDispatcher(t, delivery.Options{Ledger: st.Ledger(), Router: webhookRoute(t, rv, false)})
	admitter := &delivery.Admitter{Ledger: st.Ledger(), Wake: d.Wake, Direct: d}
	waitForHandoffs(t, ctx, d)

	admit := delivery.Admission{Source: "hook:ci", Identity: "d-lost", Recipients: []string{"ops"}, Message: inbound("deploy")}
	st.lose.Store(true)
	if _, err := admitter.Admit(ctx, admit); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("admit with a lost answer: %v, want unavailable", err)
	}
	st.lose.Store(false)
	key := delivery.EffectKey("hook:ci", "d-lost", "ops")

	waitFor(t, func() bool {
		fx, err := bs.Ledger().Get(ctx, key)
		return err == nil && fx.State == store.Completed
	}, "the unconfirmed claim to be delivered")
	fx, _ := bs.Ledger().Get(ctx, key)
	if len(fx.Attempts) != 2 || fx.Attempts[0].Outcome != store.Pending || fx.Attempts[0].Error == "" {
		t.Fatalf("attempts %+v; want the unconfirmed one (pending, with its reason) and the delivery", fx.Attempts)
	}
	// The sender saw a 503 and retries the same delivery: nothing more.
	res, err := admitter.Admit(ctx, admit)
	if err != nil || len(res.Claimed) != 0 {
		t.Fatalf("retry of the delivery: %+v, %v; want a duplicate", res, err)
	}
	time.Sleep(50 * time.Millisecond) // a second push would be under way by now; not a timing assertion
	if hits := rv.received(); len(hits) != 1 || hits[0].ID != key {
		t.Fatalf("receiver saw %d requests, want the one push", len(hits))
	}
}
