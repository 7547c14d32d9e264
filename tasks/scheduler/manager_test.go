package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

func TestI1_ConcurrentClaimsOnePush(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 5), nil)
	r.run(tk.ID) // baseline
	r.src.Push(append(items("a", 5), items("new", 1)...), nil)

	// Two runs race on the same state: the ledger lets one claim through.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); r.s.RunTask(context.Background(), tk.ID, scheduler.Check, false) }()
	}
	wg.Wait()
	// Two admissions of one inbound event race the same way.
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.eng.Admitter.Admit(context.Background(), delivery.Admission{Source: "hook:ci", Identity: "delivery-1",
				Recipients: []string{"inbox:console:alice"}, Message: delivery.Message{Kind: delivery.KindInbound, Text: "build passed"}})
		}()
	}
	wg.Wait()

	sink := deliverytest.NewRecorder()
	r.dispatch(sink, "w1")
	if got := sink.Items()["new-0"]; got != 1 {
		t.Fatalf("item new-0 pushed %d times, want exactly 1", got)
	}
	inbound := 0
	for _, d := range sink.Sent() {
		if d.Message.Kind == delivery.KindInbound {
			inbound++
		}
	}
	if inbound != 1 {
		t.Fatalf("inbound event pushed %d times, want 1", inbound)
	}
}

func TestI2_BaselineOf40ItemsPushesNothingThenOneNew(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 40), nil)
	rec := r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run outcome %q, want baseline", rec.Outcome)
	}
	fxItems, notices := r.effects(tk.ID)
	if len(fxItems) != 0 {
		t.Fatalf("baseline claimed %d item pushes, want 0", len(fxItems))
	}
	if len(notices) != 1 || !strings.Contains(deliverytest.Message(t, notices[0]).Text, "40 items") {
		t.Fatalf("want one short confirmation mentioning 40 items, got %d notices", len(notices))
	}
	// Unchanged: quiet.
	r.src.Push(items("a", 40), nil)
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeUnchanged || rec.Effects != 0 {
		t.Fatalf("unchanged run: outcome %q effects %d", rec.Outcome, rec.Effects)
	}
	r.src.Push(append(items("a", 40), items("b", 1)...), nil)
	if rec := r.run(tk.ID); rec.New != 1 || rec.Effects != 1 {
		t.Fatalf("one new item: new=%d effects=%d, want 1 and 1", rec.New, rec.Effects)
	}
	sink := deliverytest.NewRecorder()
	r.dispatch(sink, "w1")
	got := sink.Items()
	if len(got) != 1 || got["b-0"] != 1 {
		t.Fatalf("pushed items %v, want exactly b-0 once", got)
	}
}

func TestI3_SinkCrashMidSendBecomesUnknownOnRestart(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	r.run(tk.ID)
	r.dispatch(deliverytest.NewRecorder(), "replica-a") // the baseline confirmation goes out
	r.src.Push(append(items("a", 3), items("b", 2)...), nil)
	r.run(tk.ID)

	// The process dies while the provider has the request: the sink sees
	// it, then the store goes away before any outcome is written.
	crashed := deliverytest.NewRecorder()
	crashed.OnSend = func(delivery.Delivery) { r.store.Close() }
	d, _ := delivery.NewDispatcher(delivery.Options{Ledger: r.store.Ledger(), Worker: "replica-a", Now: r.clock.Now,
		Router: delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: crashed}})})
	ctx, cancel := context.WithCancel(context.Background())
	go d.Run(ctx)
	<-crashed.Arrived
	time.Sleep(50 * time.Millisecond)
	cancel()

	// Restart as a new process.
	r.open("replica-b")
	if err := r.s.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	fxItems, _ := r.effects(tk.ID)
	unknown := 0
	for _, fx := range fxItems {
		if fx.State == store.Unknown {
			unknown++
		}
	}
	if unknown != 2 {
		t.Fatalf("%d effects unknown after restart, want the 2 in flight", unknown)
	}
	runs, _ := r.m.Runs(context.Background(), tk.ID, 1)
	if len(runs) == 0 || runs[0].Outcome != tasks.OutcomeInterrupted {
		t.Fatalf("run history does not record the interruption: %+v", runs)
	}
	after := deliverytest.NewRecorder()
	r.dispatch(after, "replica-b")
	if n := len(after.Items()); n != 0 {
		t.Fatalf("%d items pushed again after restart; unknown must never be replayed automatically", n)
	}
}

func TestI4_DownForTenIntervalsGetsOneRecoveryRun(t *testing.T) {
	r := newRig(t)
	tk := r.activeTask()
	// Last ran ten hours ago on an hourly schedule.
	if _, err := r.m.Update(context.Background(), tk.ID, func(t *tasks.Task) error {
		t.LastRunEnd, t.NextRun = t0.Add(-10*time.Hour), t0.Add(-9*time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 2), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	deliverytest.WaitFor(t, func() bool { return r.src.Calls() >= 1 })
	deliverytest.WaitFor(t, func() bool { t2, _ := r.m.Get(ctx, tk.ID); return t2.LastOutcome != "" })
	time.Sleep(50 * time.Millisecond)
	if n := r.src.Calls(); n != 1 {
		t.Fatalf("%d runs after the outage, want exactly 1 recovery run", n)
	}
	t2, _ := r.m.Get(ctx, tk.ID)
	if want := t0.Add(time.Hour); !t2.NextRun.Equal(want) {
		t.Fatalf("next run %v, want %v (one interval after the recovery run)", t2.NextRun, want)
	}
	r.clock.Advance(time.Hour)
	deliverytest.WaitFor(t, func() bool { return r.src.Calls() == 2 })
	cancel()
	<-done
}

func TestI5_TaskEditedDuringRunIsRejected(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	r.src.OnFetch = func(int) { // an edit lands while the run fetches
		if _, err := r.m.Pause(context.Background(), "console:admin", tk.ID); err != nil {
			t.Error(err)
		}
	}
	rec := r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeRejected || !strings.Contains(rec.Reason, "changed") {
		t.Fatalf("outcome %q (%s), want rejected because the task changed", rec.Outcome, rec.Reason)
	}
	if _, err := r.store.Snapshots().Get(context.Background(), tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rejected run wrote a snapshot (err=%v)", err)
	}
	if fx, n := r.effects(tk.ID); len(fx)+len(n) != 0 {
		t.Fatalf("a rejected run claimed %d effects", len(fx)+len(n))
	}
	runs, _ := r.m.Runs(context.Background(), tk.ID, 1)
	if runs[0].Outcome != tasks.OutcomeRejected {
		t.Fatalf("history records %q", runs[0].Outcome)
	}
}

func TestI5_StaleEpochCommitIsRejected(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	// Another replica takes over: the lease's epoch grows past ours.
	ctx := context.Background()
	l, _ := r.store.Leases().Current(ctx, scheduler.SchedulerLease)
	_ = r.store.Leases().Release(ctx, l)
	if _, err := r.store.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	rec := r.s.RunTask(ctx, tk.ID, scheduler.Check, false)
	if rec.Outcome != tasks.OutcomeRejected || !strings.Contains(rec.Reason, "another replica") {
		t.Fatalf("outcome %q (%s), want rejected for a stale epoch", rec.Outcome, rec.Reason)
	}
}

func TestI6_TransientFailuresRetryAfterOneThenTwoSeconds(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	http500 := watch.Errorf(watch.Transient, "HTTP 500")
	r.src.Push(nil, http500)
	r.src.Push(nil, http500)
	r.src.Push(items("a", 2), nil)
	done := make(chan tasks.RunRecord)
	go func() { done <- r.run(tk.ID) }()
	for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
		deliverytest.WaitFor(t, func() bool { return r.clock.Waiters() > 0 && r.src.Calls() == i+1 })
		r.clock.Advance(wait - time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		if r.src.Calls() != i+1 {
			t.Fatalf("attempt %d came before its %v wait", i+2, wait)
		}
		r.clock.Advance(time.Millisecond)
	}
	rec := <-done
	if rec.Outcome != tasks.OutcomeBaseline || rec.Attempts != 3 {
		t.Fatalf("outcome %q after %d attempts, want success after 3", rec.Outcome, rec.Attempts)
	}

	r.src.Push(nil, watch.Errorf(watch.Auth, "HTTP 401"))
	before := r.src.Calls()
	rec = r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeFailed || rec.Class != watch.Auth || r.src.Calls()-before != 1 {
		t.Fatalf("401: outcome %q class %q attempts %d, want one attempt classified auth", rec.Outcome, rec.Class, r.src.Calls()-before)
	}
}

func TestI7_250NewItemsArePushedAcrossRunsNoneLost(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	all := append(items("a", 1), items("n", 250)...)
	r.src.Push(all, nil)
	rec := r.run(tk.ID)
	if rec.Effects != 100 || rec.Deferred != 150 {
		t.Fatalf("first run: %d effects, %d deferred; want 100 and 150", rec.Effects, rec.Deferred)
	}
	rec = r.run(tk.ID)
	if rec.Effects != 100 {
		t.Fatalf("second run: %d effects, want 100", rec.Effects)
	}
	rec = r.run(tk.ID)
	if rec.Effects != 50 || rec.Deferred != 0 {
		t.Fatalf("third run: %d effects, %d deferred; want 50 and 0", rec.Effects, rec.Deferred)
	}
	sink := deliverytest.NewRecorder()
	r.dispatch(sink, "w1")
	got := sink.Items()
	if len(got) != 250 {
		t.Fatalf("%d distinct items pushed, want 250", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("item %s pushed %d times", id, n)
		}
	}
}

func TestI9_CancelledRunCommitsNothing(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	r.src.OnFetch = func(int) { r.s.Cancel(tk.ID) }
	rec := r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeCancelled {
		t.Fatalf("outcome %q, want cancelled", rec.Outcome)
	}
	if _, err := r.store.Snapshots().Get(context.Background(), tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a cancelled run wrote its snapshot")
	}
	if fx, n := r.effects(tk.ID); len(fx)+len(n) != 0 {
		t.Fatalf("a cancelled run claimed %d effects", len(fx)+len(n))
	}
}

func TestWatchFailingAndRecoveredNoticesOnce(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	for range 5 {
		r.src.Push(nil, watch.Errorf(watch.NotFound, "HTTP 404"))
		r.run(tk.ID)
	}
	_, notices := r.effects(tk.ID)
	if len(notices) != 1 || deliverytest.Message(t, notices[0]).Title != "Watch failing" {
		t.Fatalf("%d notices after 5 failures, want one 'Watch failing'", len(notices))
	}
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	_, notices = r.effects(tk.ID)
	titles := map[string]int{}
	for _, n := range notices {
		titles[deliverytest.Message(t, n).Title]++
	}
	if titles["Watch recovered"] != 1 || titles["Watch failing"] != 1 {
		t.Fatalf("notices %v, want one failing and one recovered", titles)
	}
}

func TestI2_DeclaredTaskWithNewSourceStartsFromANewBaseline(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	decl := tasks.Declared{ID: "news", Source: watch.Spec{Kind: "rss", URL: "https://news.example.edu/feed.xml"},
		Schedule: "every 1h", Notify: []string{"inbox:console:admin"}, Owner: "console:admin"}
	if err := r.m.SetDeclared(ctx, []tasks.Declared{decl}); err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 5), nil)
	r.run("news")
	decl.Source.URL = "https://news.example.edu/other.xml"
	if err := r.m.SetDeclared(ctx, []tasks.Declared{decl}); err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("b", 7), nil) // the other feed: all of it is new to us
	if rec := r.run("news"); rec.Outcome != tasks.OutcomeBaseline || rec.Effects != 1 {
		t.Fatalf("first run on the new source: %q with %d effects, want a baseline with its one confirmation", rec.Outcome, rec.Effects)
	}
}

type scopedOpener struct {
	src   tasks.Source
	mu    sync.Mutex
	scope tasks.Scope
}

func (o *scopedOpener) Open(watch.Spec, *time.Location) (tasks.Source, error) { return o.src, nil }
func (o *scopedOpener) OpenScoped(_ watch.Spec, _ *time.Location, sc tasks.Scope) (tasks.Source, error) {
	o.mu.Lock()
	o.scope = sc
	o.mu.Unlock()
	return o.src, nil
}

// A run reads its source inside the task's grant: the opener is given the
// approved host and path prefix (I8).
func TestI8_RunsReadWithinTheGrantedScope(t *testing.T) {
	r := newRig(t)
	r.own()
	op := &scopedOpener{src: r.src}
	r.setSources(op)
	tk, err := r.m.Submit(context.Background(), tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feeds/main.xml", Schedule: "every 1h"})
	if err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 2), nil)
	r.run(tk.ID)
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.scope != (tasks.Scope{Host: "news.example.edu", PathPrefix: "/feeds"}) {
		t.Fatalf("scope %+v, want the grant's host and path prefix", op.scope)
	}
}

// A provider reporting a recipient unreachable (bot blocked or kicked)
// marks it on the task, visible in `herald tasks show`, and tells the owner
// once; a provider moving a chat (Telegram migrate_to_chat_id) moves the
// task's recipient with it.
func TestUnreachableAndMigratedRecipientsReachTheTask(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask("telegram:chat:-100", "telegram:chat:-200")
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	r.src.Push(append(items("a", 1), items("b", 1)...), nil)
	r.run(tk.ID)

	sink := deliverytest.NewRecorder()
	sink.Answer = func(d delivery.Delivery) delivery.Outcome {
		if d.To.ID == "-100" {
			return delivery.Outcome{Result: delivery.Failed, Reason: "blocked", Unreachable: true}
		}
		if d.To.ID == "-200" {
			return delivery.Outcome{Result: delivery.Completed, MigratedTo: "telegram:chat:-300"}
		}
		return delivery.Outcome{Result: delivery.Completed}
	}
	d, err := delivery.NewDispatcher(delivery.Options{Ledger: r.store.Ledger(), Worker: "w", Now: r.clock.Now, Poll: 10 * time.Millisecond,
		Router: delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: sink, delivery.TelegramChat: sink}}),
		Hooks: delivery.Hooks{
			Unreachable: func(ctx context.Context, task, rcpt, reason string) { _ = r.m.MarkUnreachable(ctx, task, rcpt, reason) },
			Migrated:    func(ctx context.Context, task, from, to string) { _ = r.m.MigrateRecipient(ctx, task, from, to) },
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	deliverytest.WaitFor(t, func() bool {
		got, _ := r.m.Get(context.Background(), tk.ID)
		return len(got.Unreachable) == 1 && slices.Contains(got.Notify, "telegram:chat:-300")
	})
	got, _ := r.m.Get(context.Background(), tk.ID)
	if got.Unreachable[0] != "telegram:chat:-100" || slices.Contains(got.Notify, "telegram:chat:-200") {
		t.Fatalf("unreachable %v, notify %v", got.Unreachable, got.Notify)
	}
	unreachableNotices := func() int {
		_, notices := r.effects(tk.ID)
		n := 0
		for _, fx := range notices {
			if strings.Contains(deliverytest.Message(t, fx).Title, "unreachable") {
				n++
			}
		}
		return n
	}
	deliverytest.WaitFor(t, func() bool { return unreachableNotices() == 1 })
	// Marking the same recipient again tells the owner nothing new.
	_ = r.m.MarkUnreachable(context.Background(), tk.ID, "telegram:chat:-100", "blocked")
	if n := unreachableNotices(); n != 1 {
		t.Fatalf("%d unreachable notices, want 1", n)
	}
}
