package runner_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// listing is a source that lists the same items every time.
type listing []watch.Item

func (l listing) Fetch(context.Context, watch.Conditional) (watch.Result, error) {
	return watch.Result{Items: l}, nil
}

// owner is the scheduler's side of a job as a test holds it: it owns
// exactly the fence it was given, and records a relinquished one.
type owner struct {
	mu           sync.Mutex
	fence        store.Fence
	relinquished []store.Fence
}

var (
	_ scheduler.Owner     = (*owner)(nil)
	_ scheduler.Baselines = (*owner)(nil)
)

func (o *owner) own(f store.Fence) {
	o.mu.Lock()
	o.fence = f
	o.mu.Unlock()
}

func (o *owner) current() store.Fence {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fence
}

func (o *owner) Owns(f store.Fence) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return f == o.fence
}

func (o *owner) Relinquish(f store.Fence) {
	o.mu.Lock()
	o.relinquished = append(o.relinquished, f)
	o.mu.Unlock()
}

func (o *owner) Enter(context.Context, *tasks.Task) (func(), error) { return func() {}, nil }
func (o *owner) Baselines() scheduler.Baselines                     { return o }
func (o *owner) Collapsed(string) bool                              { return false }
func (o *owner) Done(context.Context, *tasks.Task, bool, int)       {}
func (o *owner) Hold(string, time.Time)                             {}
func (o *owner) HostHeld(string) (time.Time, bool)                  { return time.Time{}, false }

// A runner holds no scheduling state: what it may commit is the job's
// fence. Under the fence of the lease in force it commits the baseline;
// under a stale one it commits nothing and hands the fence back to the
// scheduler at once (I5).
func TestI5_RunnerCommitsOnlyUnderTheJobsFence(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := tasks.New(tasks.Options{Store: st, Log: zerolog.Nop(),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}}})
	if err != nil {
		t.Fatal(err)
	}
	src := listing{{ID: "a", Title: "A", URL: "https://news.example.edu/a", Digest: "d"}}
	run, err := runner.New(runner.Options{Store: st, Catalog: cat, Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return src, nil })})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := cat.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := st.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-a", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the first lease runs out; another holder takes it
	cur, err := st.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stale := store.Fence{Lease: old.Name, Epoch: old.Epoch}
	o := &owner{fence: stale}
	rec := run.Run(ctx, scheduler.Job{TaskID: tk.ID, Due: scheduler.Check, Fence: stale, Owner: o})
	if rec.Outcome != tasks.OutcomeRejected || len(o.relinquished) != 1 || o.relinquished[0] != stale {
		t.Fatalf("stale fence: outcome %q, relinquished %v; want rejected and the fence handed back", rec.Outcome, o.relinquished)
	}
	if _, err := st.Snapshots().Get(ctx, tk.ID); err == nil {
		t.Fatal("a snapshot was committed under a stale fence")
	}
	fence := store.Fence{Lease: cur.Name, Epoch: cur.Epoch}
	o = &owner{fence: fence}
	rec = run.Run(ctx, scheduler.Job{TaskID: tk.ID, Due: scheduler.Check, Fence: fence, Owner: o})
	if rec.Outcome != tasks.OutcomeBaseline || len(o.relinquished) != 0 {
		t.Fatalf("current fence: outcome %q (%s), relinquished %v; want the baseline", rec.Outcome, rec.Reason, o.relinquished)
	}
	if _, err := st.Snapshots().Get(ctx, tk.ID); err != nil {
		t.Fatalf("no snapshot after the baseline: %v", err)
	}
}
