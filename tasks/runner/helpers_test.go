package runner_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/source/sourcetest"
	"github.com/herald-bridge/herald/tasks/watch"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// items returns n items named after prefix.
func items(prefix string, n int) []watch.Item { return sourcetest.Items(prefix, n) }

type rig struct {
	t       *testing.T
	store   *bolt.Store
	clock   *tasks.ManualClock
	src     *sourcetest.Scripted
	sources swappedOpener
	retry   []time.Duration
	m       *tasks.Manager // the catalog
	runner  *runner.Runner
	owner   *owner
}

func newRig(t *testing.T) *rig {
	t.Helper()
	clock := tasks.NewManualClock(t0)
	// The store keeps the runner's time, as it does in a service.
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, store: st, clock: clock, src: &sourcetest.Scripted{}, owner: &owner{}}
	r.sources.rig = r
	r.m, err = tasks.New(tasks.Options{Store: st, Clock: r.clock, Holder: "replica-a", Log: zerolog.Nop(),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*", "telegram:*"},
			AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}}})
	if err != nil {
		t.Fatal(err)
	}
	r.build()
	return r
}

// build makes the rig's runner.
func (r *rig) build() {
	r.t.Helper()
	run, err := runner.New(runner.Options{Store: r.store, Catalog: r.m, Sources: &r.sources, Clock: r.clock,
		Log: zerolog.Nop(), RetryWaits: r.retry})
	if err != nil {
		r.t.Fatal(err)
	}
	r.runner = run
}

// setSources makes runs open their sources with o (nil: the scripted one).
func (r *rig) setSources(o tasks.SourceOpener) { r.sources.set(o) }

// setRetryWaits remakes the runner with the given source retry waits.
func (r *rig) setRetryWaits(w []time.Duration) {
	r.retry = w
	r.build()
}

// own takes the scheduler lease: runs carry its fence from now on.
func (r *rig) own() {
	r.t.Helper()
	l, err := r.store.Leases().Acquire(context.Background(), scheduler.SchedulerLease, "replica-a", time.Minute)
	if err != nil {
		r.t.Fatal(err)
	}
	r.owner.own(store.Fence{Lease: l.Name, Epoch: l.Epoch})
}

// run runs task id once, as a check requested now.
func (r *rig) run(id string) tasks.RunRecord {
	r.t.Helper()
	return r.runner.Run(context.Background(), scheduler.Job{TaskID: id, Due: scheduler.Check, Fence: r.owner.current(), Owner: r.owner})
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

// swappedOpener opens sources with whatever opener the test set last,
// the scripted source by default.
type swappedOpener struct {
	mu  sync.Mutex
	rig *rig
	o   tasks.SourceOpener
}

func (s *swappedOpener) set(o tasks.SourceOpener) {
	s.mu.Lock()
	s.o = o
	s.mu.Unlock()
}

func (s *swappedOpener) Open(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
	s.mu.Lock()
	o := s.o
	s.mu.Unlock()
	if o != nil {
		return o.Open(spec, zone)
	}
	return s.rig.src, nil
}

// effects returns a task's ledger entries by kind.
func (r *rig) effects(id string) (items, notices []store.Effect) {
	r.t.Helper()
	fxs, err := r.store.Ledger().List(context.Background(), id, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, fx := range fxs {
		if fx.Kind == delivery.KindState {
			notices = append(notices, fx)
		} else {
			items = append(items, fx)
		}
	}
	return items, notices
}

func decodeMsg(t *testing.T, fx store.Effect) delivery.Message {
	t.Helper()
	var m delivery.Message
	if err := json.Unmarshal(fx.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func noticeTitles(t *testing.T, r *rig, id string) map[string]int {
	t.Helper()
	_, notices := r.effects(id)
	titles := map[string]int{}
	for _, n := range notices {
		titles[decodeMsg(t, n).Title]++
	}
	return titles
}
