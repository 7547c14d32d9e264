package runner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI4_RunCutShortByALapsedLeaseIsCancelled: the scheduling lease runs
// out while the source hangs (the replica's network stalled), and the
// fetch then fails before the scheduler saw the lapse. The run is
// recorded cancelled, not as a transient failure of the source: the check
// is owed to whoever owns the task now, and runs cut short this way, one
// after another, never make a failing streak or its notice (I4, I5).
func TestI4_RunCutShortByALapsedLeaseIsCancelled(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.setRetryWaits([]time.Duration{}) // one attempt: the failure ends the run at once
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 2), nil)
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run: %s (%s), want the baseline", rec.Outcome, rec.Error)
	}

	for i := range runner.FailingAfter {
		l, err := r.store.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-a", 30*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		r.owner.own(store.Fence{Lease: l.Name, Epoch: l.Epoch})
		taken := i%2 == 1 // every other time another replica takes it over; else it only runs out
		r.src.OnFetch = func(int) {
			r.clock.Set(l.Expires.Add(time.Millisecond)) // the fetch hangs past the lease
			if taken {
				if _, err := r.store.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-b", time.Minute); err != nil {
					t.Error(err)
				}
			}
		}
		r.src.Push(nil, watch.Errorf(watch.Transient, "read: connection reset by peer"))
		rec := r.run(tk.ID)
		if rec.Outcome != tasks.OutcomeCancelled || rec.Class != watch.Cancelled {
			t.Errorf("run %d, its lease lapsed mid-fetch (taken over: %t): outcome %q class %q (%s); want cancelled",
				i+2, taken, rec.Outcome, rec.Class, rec.Error)
		}
		if taken { // hand it back for the next round
			cur, err := r.store.Leases().Current(ctx, scheduler.SchedulerLease)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.store.Leases().Release(ctx, cur); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := r.m.Get(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Failures != 0 || got.FailingRun != "" || got.LastOutcome != tasks.OutcomeCancelled {
		t.Errorf("after %d runs cut short: failures %d, failing run %q, last outcome %q; want no streak",
			runner.FailingAfter, got.Failures, got.FailingRun, got.LastOutcome)
	}
	if titles := noticeTitles(t, r, tk.ID); len(titles) > 1 {
		t.Errorf("notices %v; want none beyond the baseline's", titles)
	}

	// A source that fails while the lease is still held is a failure.
	r.own()
	r.src.OnFetch = nil
	r.src.Push(nil, errors.New("read: connection reset by peer"))
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeFailed || rec.Class != watch.Transient {
		t.Errorf("a failure under a held lease: outcome %q class %q, want failed transient", rec.Outcome, rec.Class)
	}
}
