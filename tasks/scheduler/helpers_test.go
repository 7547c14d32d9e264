package scheduler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/source/sourcetest"
	"github.com/herald-bridge/herald/tasks/watch"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// items returns n items named after prefix.
func items(prefix string, n int) []watch.Item { return sourcetest.Items(prefix, n) }

type rig struct {
	t       *testing.T
	path    string
	store   *bolt.Store
	view    *storeView // what the engine sees of store
	clock   *tasks.ManualClock
	src     *sourcetest.Scripted
	sources swappedOpener
	holder  string
	retry   []time.Duration
	spread  time.Duration // StartSpread; the rig's default is none
	eng     *engine.Engine
	m       *tasks.Manager       // the catalog
	s       *scheduler.Scheduler // the scheduler
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "herald.db"), clock: tasks.NewManualClock(t0), src: &sourcetest.Scripted{}, spread: -1}
	r.sources.rig = r
	r.open("replica-a")
	return r
}

// open opens the rig's store as a new process named holder would.
func (r *rig) open(holder string) {
	r.t.Helper()
	st, err := bolt.Open(r.path, bolt.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.store, r.view, r.holder = st, &storeView{Store: st}, holder
	r.t.Cleanup(func() { st.Close() })
	r.build()
}

// build wires catalog, runner and scheduler over the rig's store.
func (r *rig) build() {
	r.t.Helper()
	e, err := engine.New(engine.Options{
		Store: r.view, Clock: r.clock, Holder: r.holder, Log: zerolog.Nop(), RetryWaits: r.retry, StartSpread: r.spread,
		Sources: &r.sources,
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*", "telegram:*"},
			AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.eng, r.m, r.s = e, e.Catalog, e.Scheduler
}

// setSources makes runs open their sources with o (nil: the scripted one).
func (r *rig) setSources(o tasks.SourceOpener) { r.sources.set(o) }

// setRetryWaits rebuilds the rig's parts with the given source retry waits.
func (r *rig) setRetryWaits(w []time.Duration) {
	r.retry = w
	r.build()
}

// swappedOpener opens sources with whatever opener the test set last,
// the scripted source by default.
type swappedOpener struct {
	mu  sync.Mutex
	rig *rig
	o   tasks.SourceOpener
}

var _ tasks.ScopedOpener = (*swappedOpener)(nil)

func (s *swappedOpener) set(o tasks.SourceOpener) {
	s.mu.Lock()
	s.o = o
	s.mu.Unlock()
}

func (s *swappedOpener) current() tasks.SourceOpener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.o
}

func (s *swappedOpener) Open(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
	if o := s.current(); o != nil {
		return o.Open(spec, zone)
	}
	return s.rig.src, nil
}

func (s *swappedOpener) OpenScoped(spec watch.Spec, zone *time.Location, sc tasks.Scope) (tasks.Source, error) {
	if so, ok := s.current().(tasks.ScopedOpener); ok {
		return so.OpenScoped(spec, zone, sc)
	}
	return s.Open(spec, zone)
}

// storeView is the rig's store with its snapshots replaceable, for tests
// that count or cut snapshot reads.
type storeView struct {
	store.Store
	mu    sync.Mutex
	snaps store.Snapshots
}

func (v *storeView) setSnapshots(s store.Snapshots) {
	v.mu.Lock()
	v.snaps = s
	v.mu.Unlock()
}

func (v *storeView) Snapshots() store.Snapshots {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.snaps != nil {
		return v.snaps
	}
	return v.Store.Snapshots()
}

// own makes the rig's scheduler the scheduling owner without its loop.
func (r *rig) own() {
	r.t.Helper()
	l, err := r.store.Leases().Acquire(context.Background(), scheduler.SchedulerLease, r.holder, time.Minute)
	if err != nil {
		r.t.Fatal(err)
	}
	r.s.Gain(context.Background(), 0, l)
}

// activeTask creates an approved task notifying the given recipients.
func (r *rig) activeTask(notify ...string) *tasks.Task {
	r.t.Helper()
	if len(notify) == 0 {
		notify = []string{"inbox:console:alice"}
	}
	tk, err := r.m.Submit(context.Background(), tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
		Schedule: "every 1h", Notify: notify})
	if err != nil {
		r.t.Fatal(err)
	}
	if tk.State != tasks.Active {
		r.t.Fatalf("task state %s, want active", tk.State)
	}
	return tk
}

func (r *rig) run(id string) tasks.RunRecord {
	r.t.Helper()
	rec, err := r.m.RunNow(context.Background(), "", id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// effects returns a task's ledger entries by kind.
func (r *rig) effects(id string) (items, notices []store.Effect) {
	r.t.Helper()
	return deliverytest.Effects(r.t, r.store.Ledger(), id)
}

// dispatch delivers the rig's ledger into sink until it is drained.
func (r *rig) dispatch(sink delivery.Sink, worker string) {
	r.t.Helper()
	deliverytest.Drain(r.t, r.store, sink, worker, r.clock.Now)
}

// liveTasks counts the live tasks in all (the I7 total).
func liveTasks(ctx context.Context, m *tasks.Manager) (int, error) { return m.Count(ctx) }

func redisForTest(t *testing.T) (url, prefix string) { return redistest.Prefix(t) }

func manyDeclared(n int, host string) []tasks.Declared {
	out := make([]tasks.Declared, n)
	for i := range out {
		h := host
		if h == "" {
			h = fmt.Sprintf("h%d.example.edu", i)
		}
		out[i] = tasks.Declared{ID: fmt.Sprintf("bulk-%05d", i), Source: watch.Spec{Kind: "rss", URL: "https://" + h + "/feed.xml"},
			Schedule: "every 1h", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	}
	return out
}
