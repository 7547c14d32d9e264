package scheduler_test

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

func noticeTitles(t *testing.T, r *rig, id string) map[string]int {
	t.Helper()
	_, notices := r.effects(id)
	titles := map[string]int{}
	for _, n := range notices {
		titles[deliverytest.Message(t, n).Title]++
	}
	return titles
}

// A reminder wake reads no source, so it proves nothing about a failing
// source: it must neither end the failing streak nor send "recovered".
func TestWatchReminderRunDoesNotEndFailingStreak(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/cal.ics",
		Schedule: "every 1h", Notify: []string{"inbox:console:alice"}, RemindBefore: []time.Duration{24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 2), nil)
	r.run(tk.ID) // baseline
	for range runner.FailingAfter {
		r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
		r.run(tk.ID)
	}
	if rec := r.s.RunTask(ctx, tk.ID, scheduler.Remind, false); rec.Outcome == tasks.OutcomeFailed {
		t.Fatalf("reminder run failed: %+v", rec)
	}
	if got := noticeTitles(t, r, tk.ID); got["Watch recovered"] != 0 || got["Watch failing"] != 1 {
		t.Fatalf("notices %v after a reminder wake inside a failing streak, want only one failing", got)
	}
	cur, _ := r.m.Get(ctx, tk.ID)
	if cur.Failures != runner.FailingAfter || cur.FailingRun == "" {
		t.Fatalf("reminder run reset the streak: failures %d, failing run %q", cur.Failures, cur.FailingRun)
	}
	r.src.Push(items("a", 2), nil)
	r.run(tk.ID)
	if got := noticeTitles(t, r, tk.ID); got["Watch recovered"] != 1 || got["Watch failing"] != 1 {
		t.Fatalf("notices %v, want one failing and one recovered", got)
	}
}

// A failed check does not resolve a mass change: the owner is told once
// per suspect episode, not again after every failure in between.
func TestI2_SuspectNoticeOncePerEpisodeAcrossFailures(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 20), nil)
	r.run(tk.ID) // baseline
	r.src.Push(items("b", 20), nil)
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeSuspect {
		t.Fatalf("outcome %q, want suspect", rec.Outcome)
	}
	r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
	r.run(tk.ID)
	r.src.Push(items("b", 20), nil)
	r.run(tk.ID)
	if got := noticeTitles(t, r, tk.ID); got["Many items changed at once"] != 1 {
		t.Fatalf("notices %v, want one suspect notice", got)
	}
}

// gate holds the fetches of one blocked host until release closes.
type gate struct {
	blocked string
	entered chan struct{}
	release chan struct{}
}

func newGate(blocked string) *gate {
	return &gate{blocked: blocked, entered: make(chan struct{}, 8), release: make(chan struct{})}
}

// opener returns a source per spec whose host decides whether it blocks.
func (g *gate) opener() tasks.SourceOpener {
	return tasks.SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
		u, err := url.Parse(spec.URL)
		if err != nil {
			return nil, err
		}
		return gated{g: g, host: u.Host}, nil
	})
}

type gated struct {
	g    *gate
	host string
}

func (s gated) Fetch(ctx context.Context, _ watch.Conditional) (watch.Result, error) {
	if s.host == s.g.blocked {
		s.g.entered <- struct{}{}
		select {
		case <-s.g.release:
		case <-ctx.Done():
			return watch.Result{}, ctx.Err()
		}
	}
	return watch.Result{Items: items(s.host, 1)}, nil
}

// Runs waiting for a busy source session must not hold slots of the global
// cap, or one slow host starves every other source.
func TestI7_BlockedSessionDoesNotStarveOtherSources(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	shared := newGate("slow.example.edu")
	r.setSources(shared.opener())
	r.s.SetSlots(2)
	submit := func(u string) *tasks.Task {
		tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: u, Schedule: "every 1h", Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a1, a2, a3 := submit("https://slow.example.edu/1"), submit("https://slow.example.edu/2"), submit("https://slow.example.edu/3")
	b := submit("https://fast.example.edu/feed")

	r.s.StartRun(ctx, a1.ID, scheduler.Check, false)
	<-shared.entered // a1 holds the slow session
	r.s.StartRun(ctx, a2.ID, scheduler.Check, false)
	r.s.StartRun(ctx, a3.ID, scheduler.Check, false)
	for i := 0; i < 10000 && r.s.SlotsInUse() < 2; i++ {
		runtime.Gosched()
	}
	sb := r.s.StartRun(ctx, b.ID, scheduler.Check, false)
	var rec tasks.RunRecord
	select {
	case <-sb.Done():
		rec = sb.Rec()
	case <-time.After(5 * time.Second):
		close(shared.release)
		t.Fatal("a run on another host waited for the slow host's session")
	}
	if rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("fast host run %q, want baseline", rec.Outcome)
	}
	close(shared.release)
	for i := 0; i < 2; i++ {
		<-shared.entered
	}
	r.s.WaitRuns()
}

// A cancelled run waiting for its source session gives up at once (I9).
func TestI9_RunWaitingForSessionStopsWhenCancelled(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	g := newGate("slow.example.edu")
	r.setSources(g.opener())
	submit := func(u string) *tasks.Task {
		tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: u, Schedule: "every 1h", Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a1, a2 := submit("https://slow.example.edu/1"), submit("https://slow.example.edu/2")
	r.s.StartRun(ctx, a1.ID, scheduler.Check, false)
	<-g.entered
	s2 := r.s.StartRun(ctx, a2.ID, scheduler.Check, false)
	r.s.Cancel(a2.ID)
	select {
	case <-s2.Done():
	case <-time.After(5 * time.Second):
		close(g.release)
		t.Fatal("a cancelled run kept waiting for its source session")
	}
	if s2.Rec().Outcome != tasks.OutcomeCancelled {
		t.Fatalf("outcome %q, want cancelled", s2.Rec().Outcome)
	}
	close(g.release)
	r.s.WaitRuns()
}

// Running a paused task now is a way of resuming it: it rechecks the scope.
func TestI8_RunNowOfPausedTaskRechecksScope(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:alice", URL: "https://news.example.edu/feed.xml", Schedule: "every 1h"})
	if err != nil || tk.State != tasks.Active {
		t.Fatalf("submit: %v", err)
	}
	if _, err := r.m.Pause(ctx, "console:alice", tk.ID); err != nil {
		t.Fatal(err)
	}
	p := r.m.Policy()
	p.AllowedHosts = []string{"*.other.edu"}
	r.m.SetPolicy(p)
	r.src.Push(items("a", 3), nil)
	if _, err := r.m.RunNow(ctx, "console:alice", tk.ID); !errors.Is(err, tasks.ErrScope) {
		t.Fatalf("run of a paused task outside the narrowed policy: %v, want a scope refusal", err)
	}
	if r.src.Calls() != 0 {
		t.Fatal("the source was read outside the approved scope")
	}
}

// A notice decided after ownership moved to another replica carries the
// run's stale epoch and is refused like the run's own commit (I5).
func TestI5_FailingNoticeAfterLostOwnershipIsRefused(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk := r.activeTask()
	r.src.Push(items("a", 1), nil) // an established task: its owner hears after FailingAfter failures
	r.run(tk.ID)
	for range runner.FailingAfter - 1 {
		r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
		r.run(tk.ID)
	}
	r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
	r.src.OnFetch = func(int) { // the lease is lost while the source answers
		l, _ := r.store.Leases().Current(ctx, scheduler.SchedulerLease)
		_ = r.store.Leases().Release(ctx, l)
		if _, err := r.store.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-b", time.Minute); err != nil {
			t.Error(err)
		}
		r.s.Drop(0)
	}
	r.s.RunTask(ctx, tk.ID, scheduler.Check, false)
	if got := noticeTitles(t, r, tk.ID); got["Watch failing"] != 0 {
		t.Fatalf("notices %v: a replica that lost ownership committed a notice", got)
	}
	cur, _ := r.m.Get(ctx, tk.ID)
	if cur.FailingRun != "" {
		t.Fatal("the streak is marked notified though no notice was claimed")
	}
}

// An `at` task is done after its one run; if that run fails it is shown as
// errored (and can be resumed), never left active with nothing planned.
func TestAtScheduleEndsDoneOrErrored(t *testing.T) {
	ctx := context.Background()
	at := t0.Add(time.Hour)
	submitAt := func(r *rig) *tasks.Task {
		tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
			Schedule: "at " + at.Format(time.RFC3339), Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	tests := []struct {
		name  string
		final error
		want  tasks.State
	}{
		{"succeeds", nil, tasks.Done},
		{"fails", watch.Errorf(watch.NotFound, "HTTP 404"), tasks.Errored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.own()
			tk := submitAt(r)
			r.src.Push(items("a", 2), nil)
			r.run(tk.ID) // baseline
			if cur, _ := r.m.Get(ctx, tk.ID); cur.State != tasks.Active || !cur.NextRun.Equal(at) {
				t.Fatalf("after baseline: %s next %v, want active at %v", cur.State, cur.NextRun, at)
			}
			r.clock.Set(at)
			r.src.Push(items("a", 2), tc.final)
			r.run(tk.ID)
			if cur, _ := r.m.Get(ctx, tk.ID); cur.State != tc.want {
				t.Fatalf("state %s, want %s", cur.State, tc.want)
			}
		})
	}
	t.Run("rejected run is planned again", func(t *testing.T) {
		r := newRig(t)
		r.own()
		tk := submitAt(r)
		r.src.Push(items("a", 2), nil)
		r.run(tk.ID)
		r.clock.Set(at)
		r.src.OnFetch = func(n int) {
			if n == 2 {
				if _, err := r.m.Update(ctx, tk.ID, func(t *tasks.Task) error { t.Name = "renamed"; return nil }); err != nil {
					t.Error(err)
				}
			}
		}
		if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeRejected {
			t.Fatalf("outcome %q, want rejected", rec.Outcome)
		}
		cur, _ := r.m.Get(ctx, tk.ID)
		if cur.State != tasks.Active || cur.NextRun.IsZero() {
			t.Fatalf("state %s next %v: the one run of an at task was lost", cur.State, cur.NextRun)
		}
		p := scheduler.NewPlanner(0)
		r.s.PlanTask(ctx, p, cur)
		if next, ok := p.Next(); !ok || next.After(r.clock.Now()) {
			t.Fatalf("not planned now (%v %v)", next, ok)
		}
	})
}

// Editing a config task's schedule takes effect from the last run's end,
// not after the old interval has run out.
func TestConfigScheduleEditReplansFromLastRunEnd(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	decl := tasks.Declared{ID: "campus-news", Name: "Campus news", Source: watch.Spec{Kind: "rss", URL: "https://news.example.edu/feed.xml"},
		Schedule: "every 6h", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	if err := r.m.SetDeclared(ctx, []tasks.Declared{decl}); err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 2), nil)
	r.run("campus-news")
	r.clock.Advance(10 * time.Minute)
	decl.Schedule = "every 30m"
	if err := r.m.SetDeclared(ctx, []tasks.Declared{decl}); err != nil {
		t.Fatal(err)
	}
	cur, _ := r.m.Get(ctx, "campus-news")
	if want := cur.LastRunEnd.Add(30 * time.Minute); !cur.NextRun.Equal(want) {
		t.Fatalf("next run %v, want %v (30m after the last run)", cur.NextRun, want)
	}
}

// A commit refused for a stale epoch ends ownership at once: the replica
// does not keep re-running checks it can no longer commit (I5).
func TestI5_StaleEpochRejectionEndsOwnershipAtOnce(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	l, _ := r.store.Leases().Current(ctx, scheduler.SchedulerLease)
	_ = r.store.Leases().Release(ctx, l)
	if _, err := r.store.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if rec := r.s.RunTask(ctx, tk.ID, scheduler.Check, false); rec.Outcome != tasks.OutcomeRejected {
		t.Fatalf("outcome %q, want rejected", rec.Outcome)
	}
	if owner, _ := r.s.Owner(); owner {
		t.Fatal("still claims ownership after a stale-epoch refusal")
	}
	cur, _ := r.m.Get(ctx, tk.ID)
	if !cur.NextRun.IsZero() && !cur.NextRun.After(r.clock.Now()) {
		t.Fatalf("next run %v: a stale replica planned an immediate re-run", cur.NextRun)
	}
}

// A run planned while the task was active does nothing once the task is
// paused: no fetch, no commit.
func TestI8_ScheduledRunOfPausedTaskDoesNothing(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	if _, err := r.m.Pause(ctx, "console:admin", tk.ID); err != nil {
		t.Fatal(err)
	}
	s := r.s.StartRun(ctx, tk.ID, scheduler.Check, true)
	<-s.Done()
	if r.src.Calls() != 0 {
		t.Fatal("a paused task's source was read by a scheduled run")
	}
	if _, err := r.store.Snapshots().Get(ctx, tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a paused task's run committed a snapshot")
	}
}

// Accepting a new baseline writes a snapshot, so it needs the scheduling
// owner's fence like any run (I5), and a live task.
func TestI5_RebaselineOnlyUnderOwnership(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	if _, err := r.m.Rebaseline(ctx, "console:admin", tk.ID); !errors.Is(err, tasks.ErrNotOwner) {
		t.Fatalf("rebaseline without ownership: %v, want ErrNotOwner", err)
	}
	if _, err := r.store.Snapshots().Get(ctx, tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a replica that does not own scheduling wrote a snapshot")
	}
	r.own()
	if _, err := r.m.Delete(ctx, "console:admin", tk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.Rebaseline(ctx, "console:admin", tk.ID); !errors.Is(err, tasks.ErrState) {
		t.Fatalf("rebaseline of a deleted task: %v, want ErrState", err)
	}
}
