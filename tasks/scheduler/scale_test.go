package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// gatedSource is a source whose fetches wait until the test opens the gate.
type gatedSource struct {
	gate  chan struct{}
	calls atomic.Int32
}

func (g *gatedSource) Fetch(ctx context.Context, _ watch.Conditional) (watch.Result, error) {
	g.calls.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return watch.Result{}, watch.Classify(watch.Cancelled, ctx.Err())
	}
	return watch.Result{Items: items("x", 1)}, nil
}

// Many tasks due at once wait in a bounded queue for a fixed pool of
// workers: the goroutines do not grow with the tasks due, every task
// still runs once, and a stop while runs wait returns at once, leaving
// the waiting checks owed (I4, I7).
func TestI7_DueRunsWaitInABoundedQueue(t *testing.T) {
	r := newRig(t)
	const n = 1500 // more than the queue and the workers hold
	p := r.m.Policy()
	p.Limits.Concurrency = 64
	r.m.SetPolicy(p)
	g := &gatedSource{gate: make(chan struct{})}
	r.setSources(tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return g, nil }))
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.m.SetDeclared(ctx, manyDeclared(n, "")); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	held := scheduler.RunWorkers + scheduler.RunQueueSize
	deliverytest.WaitFor(t, func() bool { return r.s.RunningCount() == held })
	if extra := runtime.NumGoroutine() - base; extra > scheduler.RunWorkers+50 {
		t.Fatalf("%d goroutines more with %d tasks due, want about %d workers", extra, n, scheduler.RunWorkers)
	}
	close(g.gate)
	deliverytest.WaitFor(t, func() bool { return g.calls.Load() == n && r.s.RunningCount() == 0 })
	cancel()
	<-done
	all, _ := r.m.All(context.Background())
	for _, tk := range all {
		if tk.LastOutcome != tasks.OutcomeBaseline {
			t.Fatalf("task %s: last outcome %q, want baseline (each task runs once)", tk.ID, tk.LastOutcome)
		}
	}
	if c := g.calls.Load(); c != n {
		t.Fatalf("%d fetches for %d tasks, want one each", c, n)
	}
}

// Stopping while many runs wait drops the waiting ones unrun and
// returns: nothing is written for them, so their checks stay owed.
func TestI4_StopWithManyRunsWaitingLeavesThemOwed(t *testing.T) {
	r := newRig(t)
	const n = 1200
	g := &gatedSource{gate: make(chan struct{})}
	r.setSources(tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return g, nil }))
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.m.SetDeclared(ctx, manyDeclared(n, "")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	deliverytest.WaitFor(t, func() bool { return r.s.RunningCount() == scheduler.RunWorkers+scheduler.RunQueueSize })
	before := r.store.CommitStats().Writes
	cancel()
	<-done
	// The runs inside a source or waiting for a slot record their
	// cancellation (at most one per worker, two writes each), and the
	// lease is given back; the queued ones write nothing.
	if w := r.store.CommitStats().Writes - before; w > 2*scheduler.RunWorkers+16 {
		t.Fatalf("stopping wrote %d records, want at most %d", w, 2*scheduler.RunWorkers+16)
	}
	all, _ := r.m.All(context.Background())
	for _, tk := range all {
		if tk.NextRun.IsZero() || tk.NextRun.After(t0) {
			t.Fatalf("task %s: next run %v after the stop, want still owed", tk.ID, tk.NextRun)
		}
	}
}

// Tasks on one host with different credentials are different source
// sessions; policy.limits.per_host still lets only so many of their
// checks reach the host at once (I7). The server counts what it sees.
func TestI7_PerHostCapLimitsChecksAtOnce(t *testing.T) {
	const tasksOnHost, perHost = 12, 2
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		_, _ = io.WriteString(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>A</title><guid>a</guid></item></channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	r := newRig(t)
	p := r.m.Policy()
	p.Limits.Concurrency, p.Limits.PerHostRuns = 8, perHost
	r.m.SetPolicy(p)
	r.setSources(tasks.SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
		spec.URL = srv.URL + "/feed.xml" // every task reads the one host
		return source.New(spec, source.Options{AllowPrivate: true})
	}))
	decls := manyDeclared(tasksOnHost, "feeds.example.edu")
	for i := range decls {
		decls[i].Source.Headers = map[string]string{"Authorization": fmt.Sprintf("Bearer k%d", i)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.m.SetDeclared(ctx, decls); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	for left := tasksOnHost; left > 0; left-- {
		deliverytest.WaitFor(t, func() bool { return int(inFlight.Load()) == min(perHost, left) })
		release <- struct{}{}
	}
	deliverytest.WaitFor(t, func() bool { return r.s.RunningCount() == 0 })
	cancel()
	<-done
	if m := most.Load(); m > perHost {
		t.Fatalf("the host saw %d checks at once, cap %d", m, perHost)
	}
}

// An unchanged source costs a 304 and no parse: the validators of each
// task are stored with its snapshot, so they survive a restart (I7).
func TestI7_UnchangedSourceCostsA304(t *testing.T) {
	var full, notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("If-None-Match") == `"v1"` && req.Header.Get("If-Modified-Since") == "Sat, 28 Nov 2026 10:00:00 GMT" {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")
		_, _ = io.WriteString(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>A</title><guid>a</guid></item></channel></rss>`)
	}))
	t.Cleanup(srv.Close)
	r := newRig(t)
	opener := tasks.SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
		spec.URL = srv.URL + "/feed.xml"
		return source.New(spec, source.Options{AllowPrivate: true})
	})
	r.setSources(opener)
	r.own()
	tk := r.activeTask()
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run: %+v", rec)
	}
	for range 3 {
		if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeUnchanged || rec.Items != 1 {
			t.Fatalf("unchanged run: %+v", rec)
		}
	}
	// A restart reads the validators back from the store.
	r.store.Close()
	r.open("replica-a")
	r.setSources(opener)
	r.own()
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeUnchanged {
		t.Fatalf("run after restart: %+v", rec)
	}
	if full.Load() != 1 || notModified.Load() != 4 {
		t.Fatalf("the source answered %d full documents and %d 304s, want 1 and 4", full.Load(), notModified.Load())
	}
}

// countingSnapshots counts snapshot reads of the store it wraps.
type countingSnapshots struct {
	store.Snapshots
	reads atomic.Int32
}

func (c *countingSnapshots) Get(ctx context.Context, id string) ([]byte, error) {
	c.reads.Add(1)
	return c.Snapshots.Get(ctx, id)
}

type snapshotCounter struct {
	store.Store
	snaps *countingSnapshots
}

func (s snapshotCounter) Snapshots() store.Snapshots { return s.snaps }

// Planning a reminder task after a start reads no snapshot: the next
// reminder instant is kept with the task when its run commits (I4: a
// start reads what it needs, not every snapshot).
func TestI4_PlanningRemindersReadsNoSnapshot(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/cal.ics",
		Schedule: "every 100h", Notify: []string{"inbox:console:alice"}, RemindBefore: []time.Duration{24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	due := t0.Add(72 * time.Hour)
	r.src.Push([]watch.Item{{ID: "hw", Title: "Homework", URL: "https://news.example.edu/hw", Digest: "d", Due: due}}, nil)
	r.run(tk.ID) // baseline
	cur, err := r.m.Get(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.NextRemind == nil || !cur.NextRemind.Equal(due.Add(-24*time.Hour)) {
		t.Fatalf("next reminder kept with the task: %v, want %v", cur.NextRemind, due.Add(-24*time.Hour))
	}
	counted := snapshotCounter{Store: r.store, snaps: &countingSnapshots{Snapshots: r.store.Snapshots()}}
	r.view.setSnapshots(counted.snaps)
	p := scheduler.NewPlanner(0)
	r.s.PlanTask(ctx, p, cur)
	r.view.setSnapshots(nil)
	if n := counted.snaps.reads.Load(); n != 0 {
		t.Fatalf("planning read %d snapshots, want none", n)
	}
	if at, ok := p.Next(); !ok || !at.Equal(due.Add(-24*time.Hour)) {
		t.Fatalf("planned wake %v, want the reminder at %v", at, due.Add(-24*time.Hour))
	}
}

// policy.limits.per_host.per_minute spaces the checks one host sees: with
// one a minute, a second check of that host must wait about a minute (a
// caller that cannot wait that long is refused at once, not made to
// wait), while another host is not held up (I7).
func TestI7_PerHostRateSpacesChecks(t *testing.T) {
	r := newRig(t)
	l := r.m.Policy().Limits
	l.PerHostPerMinute = 1
	ctx := context.Background()
	leave, err := r.s.EnterHost(ctx, "https://feeds.example.edu/a.xml", l)
	if err != nil {
		t.Fatal(err)
	}
	leave()
	soon, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.s.EnterHost(soon, "https://FEEDS.example.edu/b.xml", l); err == nil {
		t.Fatal("a second check of the same host within the minute went ahead")
	}
	leave, err = r.s.EnterHost(soon, "https://other.example.edu/a.xml", l)
	if err != nil {
		t.Fatalf("another host was held up: %v", err)
	}
	leave()
}

// stoppingStore is the rig's store whose snapshot read finds the run
// stopped: stop is called first, as a shutdown landing just then.
type stoppingStore struct {
	store.Store
	stop func()
}

func (s stoppingStore) Snapshots() store.Snapshots {
	return stoppingSnapshots{s.Store.Snapshots(), s.stop}
}

type stoppingSnapshots struct {
	store.Snapshots
	stop func()
}

func (s stoppingSnapshots) Get(ctx context.Context, taskID string) ([]byte, error) {
	s.stop()
	return s.Snapshots.Get(ctx, taskID)
}

// A stop that lands while a run reads the store, after it took its slot,
// cancels the run: the read fails only because of the stop, so the check
// is still owed and counts as no failure of the source (I4).
func TestI4_StopDuringARunsStoreReadLeavesTheCheckOwed(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r.view.setSnapshots(stoppingStore{Store: r.store, stop: stop}.Snapshots())
	rec := r.s.RunTask(ctx, tk.ID, scheduler.Check, true)
	r.view.setSnapshots(nil)
	if rec.Outcome != tasks.OutcomeCancelled {
		t.Errorf("run outcome %q (%s), want cancelled", rec.Outcome, rec.Error)
	}
	got, err := r.m.Get(context.Background(), tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.NextRun.IsZero() || got.NextRun.After(t0) || got.Failures != 0 {
		t.Fatalf("after the stop: next run %v, failures %d; want the check owed now (%v) and no failure", got.NextRun, got.Failures, t0)
	}
}
