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
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/tasks"
)

// TestOrder_TwoReplicasNeverSendALaterPushBesideTheEarlierOne: two
// replicas' dispatchers on one store both read "new X" and "changed X"
// of one task to one recipient, queued together, and both decide to send
// them as one message. Each then wins the claim of one of them: replica
// A the news, replica B the change. B must not send the change while A
// has the news on the wire (the receiver would see the change first, or
// both at once): it gives the change back unsent, and the change follows
// the news.
func TestOrder_TwoReplicasNeverSendALaterPushBesideTheEarlierOne(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T, now func() time.Time) store.Ledger
	}{
		{"bolt", func(t *testing.T, now func() time.Time) store.Ledger {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st.Ledger()
		}},
		{"redis", func(t *testing.T, now func() time.Time) store.Ledger {
			url, prefix := redistest.Prefix(t)
			st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st.Ledger()
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			clock := tasks.NewManualClock(t0)
			l := backend.open(t, clock.Now)
			ctx := context.Background()
			news, change := "fx_race_news", "fx_race_change"
			var fxs []store.Effect
			for i, m := range []delivery.Message{
				notice(item("x", "Exam announced", delivery.ChangeNew, "")),
				notice(item("x", "Exam moved", delivery.ChangeChanged, "Exam announced")),
			} {
				payload, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				fxs = append(fxs, store.Effect{Key: []string{news, change}[i], TaskID: "t-news", Recipient: "ops", Kind: delivery.KindChanged,
					Payload: payload, NotBefore: t0, ExpiresAt: t0.Add(time.Hour), CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)})
			}
			if _, err := l.Commit(ctx, store.RunCommit{TaskID: "t-news", Effects: fxs}); err != nil {
				t.Fatal(err)
			}

			// The receiver keeps the news unanswered until the test lets
			// it go, or until another request arrives beside it.
			var (
				mu       sync.Mutex
				onWire   bool // the news is unanswered
				overlaps int  // requests that arrived while it was
				other    = make(chan struct{}, 8)
				letGo    = make(chan struct{})
			)
			var rv *receiver
			rv = newReceiver(t, func(n int, w http.ResponseWriter) bool {
				id := rv.received()[n-1].ID
				mu.Lock()
				if onWire {
					overlaps++
				}
				first := id == news && !onWire && n == 1
				if first {
					onWire = true
				}
				mu.Unlock()
				if !first {
					other <- struct{}{}
					return true
				}
				select {
				case <-letGo:
				case <-other:
				case <-time.After(10 * time.Second):
				}
				mu.Lock()
				onWire = false
				mu.Unlock()
				return true
			})

			// The interleaving: both replicas read the queue and the task's
			// pushes before either claims one; A claims the news first, B
			// the change first.
			g := newClaimGate(map[string]string{news: "replica-a", change: "replica-b"})
			route := webhookRoute(t, rv, false)
			for _, worker := range []string{"replica-a", "replica-b"} {
				d, err := delivery.NewDispatcher(delivery.Options{Ledger: &gatedLedger{Ledger: l, worker: worker, gate: g},
					Router: route, Worker: worker, Workers: 4, Now: clock.Now, Poll: 5 * time.Millisecond, Log: zerolog.Nop()})
				if err != nil {
					t.Fatal(err)
				}
				runCtx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = d.Run(runCtx); close(done) }()
				t.Cleanup(func() { cancel(); <-done })
			}

			waitFor(t, func() bool {
				fx, err := l.Get(ctx, change)
				return err == nil && len(fx.Attempts) > 0 && !fx.InFlight
			}, "replica B to end its attempt at the change")
			close(letGo)
			waitFor(t, func() bool {
				fx, err := l.Get(ctx, news)
				return err == nil && fx.State == store.Completed
			}, "the news to be delivered")
			clock.Advance(2 * time.Second) // past any wait behind the news
			waitFor(t, func() bool {
				fx, err := l.Get(ctx, change)
				return err == nil && fx.State == store.Completed
			}, "the change to be delivered")

			mu.Lock()
			defer mu.Unlock()
			if overlaps != 0 {
				t.Errorf("%d request(s) reached the receiver while the news before them was on the wire", overlaps)
			}
			if got := ids(rv.received()); len(got) != 2 || got[0] != news || got[1] != change {
				t.Errorf("the receiver got %v; want the news, then the change", got)
			}
		})
	}
}

// claimGate makes two dispatchers interleave as the test says: every
// Begin waits until both have read the task's pushes (List), and a key's
// Begin by any other worker waits until its first worker's Begin has
// answered. Each wait is bounded.
type claimGate struct {
	first  map[string]string        // key → the worker that claims it first
	begun  map[string]chan struct{} // key → closed once its first worker's Begin answered
	listed map[string]bool
	read   chan struct{} // closed once both have read
	mu     sync.Mutex
}

func newClaimGate(first map[string]string) *claimGate {
	g := &claimGate{first: first, begun: map[string]chan struct{}{}, listed: map[string]bool{}, read: make(chan struct{})}
	for k := range first {
		g.begun[k] = make(chan struct{})
	}
	return g
}

func (g *claimGate) wait(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
	}
}

// gatedLedger is the real ledger, with one worker's calls held back by a
// claimGate.
type gatedLedger struct {
	store.Ledger
	worker string
	gate   *claimGate
}

func (l *gatedLedger) List(ctx context.Context, taskID string, limit int) ([]store.Effect, error) {
	fxs, err := l.Ledger.List(ctx, taskID, limit)
	g := l.gate
	g.mu.Lock()
	if !g.listed[l.worker] {
		g.listed[l.worker] = true
		if len(g.listed) == 2 {
			close(g.read)
		}
	}
	g.mu.Unlock()
	return fxs, err
}

func (l *gatedLedger) Begin(ctx context.Context, key, worker string, seen int, now time.Time) (store.Effect, error) {
	g := l.gate
	g.wait(g.read)
	first, gated := g.first[key]
	if !gated {
		return l.Ledger.Begin(ctx, key, worker, seen, now)
	}
	if first != l.worker {
		g.wait(g.begun[key])
		return l.Ledger.Begin(ctx, key, worker, seen, now)
	}
	fx, err := l.Ledger.Begin(ctx, key, worker, seen, now)
	g.mu.Lock()
	select {
	case <-g.begun[key]:
	default:
		close(g.begun[key])
	}
	g.mu.Unlock()
	return fx, err
}
