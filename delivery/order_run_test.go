package delivery_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestOrder_NewItemArrivesBeforeItsOwnReminder: a run finds a new item
// already inside its reminder window. The webhook recipient gets the
// watch.changed POST with the news of it first, then the watch.deadline
// one reminding of it.
func TestOrder_NewItemArrivesBeforeItsOwnReminder(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	news, remind := r.newItemInItsWindow("essay")
	r.start(webhookRoute(t, rv, false), "w", nil)
	r.settled(news.Key, store.Completed)
	r.settled(remind.Key, store.Completed)
	if got := postTypes(t, rv.received()); len(got) != 2 || got[0] != "watch.changed new" || got[1] != "watch.deadline deadline" {
		t.Errorf("the receiver got %q; want the news of the item, then its reminder", got)
	}
}

// TestOrder_NewItemBeforeItsReminderAcrossARestart: the process dies
// after beginning the news of a new item inside its reminder window,
// before the request left. After the restart the news is queued again
// later than the reminder claimed with it, and still goes first,
// whichever of the two keys sorts first.
func TestOrder_NewItemBeforeItsReminderAcrossARestart(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	rv := newReceiver(t, nil)
	var pairs [][2]store.Effect
	keyFirst := false // a pair whose reminder's key sorts before its news's
	for i := 0; !keyFirst; i++ {
		if i == 16 {
			t.Fatal("no task's reminder key sorted before its news key")
		}
		news, remind := r.newItemInItsWindow("essay")
		pairs = append(pairs, [2]store.Effect{news, remind})
		keyFirst = remind.Key < news.Key
	}
	// What a dying worker left: each news push begun, nothing sent.
	l := r.st.Ledger()
	if err := l.Sending(ctx, "w-dead", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if _, err := l.Begin(ctx, p[0].Key, "w-dead", p[0].Version(), r.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	r.crash()

	r.open()
	r.clock.Advance(10 * time.Second)
	rec, err := r.st.Ledger().Recover(ctx, store.Recovery{}, r.clock.Now())
	if err != nil || len(rec) != len(pairs) {
		t.Fatalf("recover: %v, %d interrupted; want the %d news pushes", err, len(rec), len(pairs))
	}
	r.start(webhookRoute(t, rv, false), "w", nil)
	r.advance(time.Second)
	r.advance(time.Second)
	for _, p := range pairs {
		r.settled(p[0].Key, store.Completed)
		r.settled(p[1].Key, store.Completed)
	}
	for _, p := range pairs {
		news, remind := rv.arrival(p[0].Key), rv.arrival(p[1].Key)
		if news < 0 || remind < 0 || remind < news {
			t.Errorf("task %s: the news arrived as request %d, its reminder as %d; want the news first (keys sort reminder first: %t)",
				p[0].TaskID, news, remind, p[1].Key < p[0].Key)
		}
	}
}

// newItemInItsWindow creates a task reminding 24 h before due times,
// runs its baseline on an empty source, then a run finding one new item
// due in 3 hours. It returns the news and the reminder that run claimed
// for the webhook recipient "ops".
func (r *rig) newItemInItsWindow(id string) (news, remind store.Effect) {
	r.t.Helper()
	ctx := context.Background()
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
		Name: "Homework", RemindBefore: []time.Duration{24 * time.Hour}, Notify: []string{"ops"}})
	if err != nil {
		r.t.Fatal(err)
	}
	if tk.State != tasks.Active {
		r.t.Fatalf("task state %s, want active", tk.State)
	}
	run := r.runs(tk.ID)
	if rec := run(); rec.Outcome != tasks.OutcomeBaseline {
		r.t.Fatalf("first run: %s (%s), want the baseline", rec.Outcome, rec.Reason)
	}
	due := r.clock.Now().Add(3 * time.Hour)
	run(watch.Item{ID: id, Title: "Essay", URL: "https://news.example.edu/" + id, Digest: "d-" + id, Due: due})
	fxs, err := r.st.Ledger().List(ctx, tk.ID, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, fx := range fxs {
		switch fx.Kind {
		case delivery.KindChanged:
			news = fx
		case delivery.KindDeadline:
			remind = fx
		}
	}
	if news.Key == "" || remind.Key == "" || !news.CreatedAt.Equal(remind.CreatedAt) {
		r.t.Fatalf("the run claimed %d pushes; want the news and the reminder of the item, claimed together", len(fxs))
	}
	return news, remind
}

// runs returns a function that runs task id once, as the scheduler's
// job under the shard's lease, over a source listing the given items.
func (r *rig) runs(id string) func(items ...watch.Item) tasks.RunRecord {
	r.t.Helper()
	ctx := context.Background()
	l, err := r.st.Leases().Acquire(ctx, scheduler.SchedulerLease, "replica-a", time.Hour)
	if err != nil {
		r.t.Fatal(err)
	}
	o := &jobOwner{fence: store.Fence{Lease: l.Name, Epoch: l.Epoch}}
	return func(items ...watch.Item) tasks.RunRecord {
		r.source = fixedListing(items)
		return r.eng.Runner.Run(ctx, scheduler.Job{TaskID: id, Due: scheduler.Check, Fence: o.fence, Owner: o})
	}
}

// fixedListing is a source that lists the same items every time.
type fixedListing []watch.Item

func (l fixedListing) Fetch(context.Context, watch.Conditional) (watch.Result, error) {
	return watch.Result{Items: l}, nil
}

// jobOwner is the scheduler's side of a job the test runs itself: it
// owns exactly its fence, and never waits for a turn.
type jobOwner struct {
	mu    sync.Mutex
	fence store.Fence
}

var _ scheduler.Owner = (*jobOwner)(nil)

func (o *jobOwner) Owns(f store.Fence) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return f == o.fence
}
func (o *jobOwner) Relinquish(store.Fence) {}
func (o *jobOwner) Enter(context.Context, *tasks.Task) (func(), error) {
	return func() {}, nil
}
func (o *jobOwner) Baselines() scheduler.Baselines               { return o }
func (o *jobOwner) Collapsed(string) bool                        { return false }
func (o *jobOwner) Done(context.Context, *tasks.Task, bool, int) {}
func (o *jobOwner) Hold(string, time.Time)                       {}
func (o *jobOwner) HostHeld(string) (time.Time, bool)            { return time.Time{}, false }

// postTypes lists each task notice POST the receiver got (not the task
// state notices) as its type and its items' changes.
func postTypes(t *testing.T, hits []hit) []string {
	t.Helper()
	var out []string
	for _, h := range hits {
		var body struct {
			Type  string                    `json:"type"`
			Items []struct{ Change string } `json:"items"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type == delivery.KindState {
			continue
		}
		s := body.Type
		for _, it := range body.Items {
			s += " " + it.Change
		}
		out = append(out, s)
	}
	return out
}

// arrival is the index of the first request the receiver got under
// webhook-id id (-1: none).
func (rv *receiver) arrival(id string) int {
	for i, h := range rv.received() {
		if h.ID == id {
			return i
		}
	}
	return -1
}
