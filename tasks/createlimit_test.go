package tasks

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	heraldredis "github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/store/redis/redistest"
)

// sharedBackend opens the store two replicas share, once per replica: on
// bbolt both get the one open store, on Redis each its own client on one
// key prefix. now is the stores' clock (lease expiry).
type sharedBackend struct {
	name string
	open func(t *testing.T, now func() time.Time) (a, b store.Store)
}

func sharedBackends() []sharedBackend {
	return []sharedBackend{
		{"bolt", func(t *testing.T, now func() time.Time) (store.Store, store.Store) {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, st
		}},
		{"redis", func(t *testing.T, now func() time.Time) (store.Store, store.Store) {
			url, prefix := redisForTest(t)
			var out [2]store.Store
			for i := range out {
				st, err := heraldredis.Open(context.Background(), url, heraldredis.Options{KeyPrefix: prefix, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				out[i] = st
			}
			return out[0], out[1]
		}},
	}
}

// redisForTest returns the test Redis (HERALD_TEST_REDIS_URL; required in
// CI) and a key prefix of this test alone, whose keys go when it ends.
func redisForTest(t *testing.T) (url, prefix string) { return redistest.Prefix(t) }

// replica is one herald process's manager over a shared store.
func replica(t *testing.T, st store.Store, holder string, clock Clock, maxTasks int) *Manager {
	t.Helper()
	m, err := New(Options{
		Store: st, Clock: clock, Holder: holder, Log: zerolog.Nop(),
		Policy: Policy{Requesters: []string{"console:*"}, AllowedHosts: []string{"*.example.edu"},
			Limits: Limits{MaxTasks: maxTasks}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func request(who string) Submission {
	return Submission{Principal: who, URL: "https://news.example.edu/feed.xml", Schedule: "every 1h"}
}

// Two replicas on one store taking requests at once: together they never
// create more tasks than the limit, and every request past it is refused
// with ErrLimit (I7).
func TestI7_TaskLimitHoldsAcrossReplicas(t *testing.T) {
	const limit, perReplica = 4, 10
	for _, b := range sharedBackends() {
		t.Run(b.name, func(t *testing.T) {
			sa, sb := b.open(t, time.Now)
			replicas := []*Manager{replica(t, sa, "replica-a", nil, limit), replica(t, sb, "replica-b", nil, limit)}
			ctx := context.Background()
			var created atomic.Int32
			errs := make(chan error, len(replicas)*perReplica)
			var wg sync.WaitGroup
			for _, m := range replicas {
				for range perReplica {
					wg.Go(func() {
						if _, err := m.Submit(ctx, request("console:alice")); err != nil {
							errs <- err
							return
						}
						created.Add(1)
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if !errors.Is(err, ErrLimit) {
					t.Errorf("a refused request got %v, want ErrLimit", err)
				}
			}
			live, err := liveTasks(ctx, replicas[0])
			if err != nil {
				t.Fatal(err)
			}
			if live != limit || created.Load() != limit {
				t.Fatalf("%d live tasks, %d requests accepted; limit %d", live, created.Load(), limit)
			}
		})
	}
}

// stallingStore is a shared store seen by one replica whose catalog reads
// can be held up after they have read, as a process paused mid-request.
type stallingStore struct {
	store.Store
	cat *stallingCatalog
}

func (s *stallingStore) Catalog() store.Catalog { return s.cat }

type stallingCatalog struct {
	store.Catalog
	afterList atomic.Pointer[func()]
}

func (c *stallingCatalog) List(ctx context.Context) ([]store.Record, error) {
	recs, err := c.Catalog.List(ctx)
	if hook := c.afterList.Swap(nil); hook != nil {
		(*hook)()
	}
	return recs, err
}

// A replica that counted the tasks and then stalled past its task-create
// lease cannot create one: another replica took the lease over and created
// the last task the limit allows, so the stalled write carries a stale
// epoch and is refused, and counting again gives ErrLimit (I7).
func TestI7_StalledCreatorPastItsLeaseCannotExceedLimit(t *testing.T) {
	for _, b := range sharedBackends() {
		t.Run(b.name, func(t *testing.T) {
			var skew atomic.Int64 // the stores' clock runs ahead of the wall by this much
			now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			sa, sb := b.open(t, now)
			stalling := &stallingStore{Store: sa, cat: &stallingCatalog{Catalog: sa.Catalog()}}
			clock := NewManualClock(t0)
			a := replica(t, stalling, "replica-a", clock, 2)
			bm := replica(t, sb, "replica-b", clock, 2)
			ctx := context.Background()
			if _, err := bm.Submit(ctx, request("console:bob")); err != nil {
				t.Fatal(err)
			}

			counted, resume := make(chan struct{}), make(chan struct{})
			hook := func() { close(counted); <-resume }
			stalling.cat.afterList.Store(&hook)
			done := make(chan error, 1)
			go func() {
				_, err := a.Submit(ctx, request("console:alice"))
				done <- err
			}()
			<-counted // a has counted 1 of 2 under the lease, and stalls
			skew.Add(int64(createLeaseTTL + time.Second))
			if _, err := bm.Submit(ctx, request("console:bob")); err != nil {
				t.Fatalf("the other replica could not create the last task: %v", err)
			}
			close(resume)
			if err := <-done; !errors.Is(err, ErrLimit) {
				t.Fatalf("the stalled replica's request got %v, want ErrLimit", err)
			}
			if live, err := liveTasks(ctx, bm); err != nil || live != 2 {
				t.Fatalf("%d live tasks (%v), limit 2", live, err)
			}
		})
	}
}

// While another replica keeps the task-create lease, a request waits a
// little, then gets a plain "try again" in both languages, and nothing is
// created.
func TestCreateLeaseHeldTooLongAsksToTryAgain(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.store.Leases().Acquire(ctx, CreateLease, "replica-b", time.Hour); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.m.Submit(ctx, request("console:alice"))
		done <- err
	}()
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-r.clock.waiting: // the request waits for the lease: let the wait pass
			r.clock.Advance(time.Second)
		}
	}
	var ue *UserError
	if !errors.As(err, &ue) || !errors.Is(err, ErrBusy) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("got %v, want a UserError of ErrBusy (store unavailable)", err)
	}
	if zh, _ := text.Error("zh", err); ue.Msg == "" || zh == "" || zh == ue.Msg {
		t.Fatalf("busy error texts %q / %q", ue.Msg, zh)
	}
	if live, err := liveTasks(ctx, r.m); err != nil || live != 0 {
		t.Fatalf("%d live tasks (%v) after a refused request", live, err)
	}
}
