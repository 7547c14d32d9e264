package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/tasks"
)

// TestSpec21_I5_TwoReplicasSendEachRetryOnce: two replicas' dispatchers
// share one Redis store and both watch the queue while a push's retries
// wait there. The receiver answers 503, 503, 200: it gets exactly three
// requests, one per attempt, all under the push's webhook-id; no retry
// is sent by both replicas.
func TestSpec21_I5_TwoReplicasSendEachRetryOnce(t *testing.T) {
	url, prefix := redistest.Prefix(t)
	clock := tasks.NewManualClock(t0)
	st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rv := newReceiver(t, answers(http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusOK))
	route := scheduledRoute(t, rv, time.Second, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, worker := range []string{"replica-a", "replica-b"} {
		d, err := delivery.NewDispatcher(delivery.Options{Ledger: st.Ledger(), Router: route, Worker: worker, Workers: 4,
			Now: clock.Now, Poll: time.Millisecond, Log: zerolog.Nop(), Jitter: func() float64 { return 0 },
			Recipients: delivery.KVRecipients{KV: st.Channels()}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.Run(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	payload, _ := json.Marshal(inbound("deploy"))
	key := "fx_two_replicas"
	if _, err := st.Ledger().Commit(ctx, store.RunCommit{TaskID: "hook:ci", Effects: []store.Effect{{Key: key, TaskID: "hook:ci",
		Recipient: "ops", Kind: delivery.KindInbound, Payload: payload, NotBefore: t0, CreatedAt: t0}}}); err != nil {
		t.Fatal(err)
	}
	get := func() store.Effect {
		fx, err := st.Ledger().Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return fx
	}
	for i := 1; i <= 2; i++ {
		waitFor(t, func() bool { fx := get(); return len(fx.Attempts) == i && !fx.InFlight }, "attempt %d", i)
		time.Sleep(20 * time.Millisecond) // both replicas look at the queue meanwhile
		clock.Advance(time.Second)
	}
	waitFor(t, func() bool { return get().State == store.Completed }, "the third attempt to complete")
	time.Sleep(50 * time.Millisecond)
	clock.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	hits := rv.received()
	if len(hits) != 3 {
		t.Fatalf("receiver saw %d requests, want 3", len(hits))
	}
	by := map[string]bool{}
	for _, a := range get().Attempts {
		by[a.By] = true
	}
	for _, h := range hits {
		if h.ID != key {
			t.Errorf("request under %q, want %q", h.ID, key)
		}
	}
	t.Logf("attempts made by %v", by)
}
