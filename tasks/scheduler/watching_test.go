package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Many tasks taking their baselines as scheduling starts are confirmed
// with one message per recipient ("Now watching 200 sources"), sent where
// the tasks' notices go, never one per task; a recipient with a single
// new task gets that task's own confirmation (I2).
func TestI2_ManyBaselinesAtStartAreOneMessagePerRecipient(t *testing.T) {
	r := newRig(t)
	p := r.m.Policy()
	p.Limits.Concurrency = 16
	r.m.SetPolicy(p)
	r.src.Push(items("a", 3), nil)
	to := func(decls []tasks.Declared, recipient string) []tasks.Declared {
		for i := range decls {
			decls[i].Notify = []string{recipient}
		}
		return decls
	}
	decls := to(manyDeclared(300, ""), "inbox:console:bob")
	for i := range 200 {
		decls[i].Notify = []string{"inbox:console:admin"}
		decls[i].Source.URL = fmt.Sprintf("https://a%d.example.edu/feed.xml", i)
	}
	alone := tasks.Declared{ID: "alone", Source: watch.Spec{Kind: "rss", URL: "https://c.example.edu/feed.xml"},
		Schedule: "every 1h", Notify: []string{"inbox:console:carol"}, Owner: "console:admin"}
	decls = append(decls, alone)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.m.SetDeclared(ctx, decls); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	deliverytest.WaitFor(t, func() bool {
		fxs, _ := r.store.Ledger().List(context.Background(), scheduler.WatchingSource, 0)
		return len(fxs) == 2
	})
	deliverytest.WaitFor(t, func() bool { return r.src.Calls() == len(decls) && r.s.RunningCount() == 0 })
	cancel()
	<-done

	fxs, _ := r.store.Ledger().List(context.Background(), scheduler.WatchingSource, 0)
	got := map[string]string{}
	for _, fx := range fxs {
		got[fx.Recipient] = deliverytest.Message(t, fx).Text
	}
	want := map[string]string{
		"inbox:console:admin": "Now watching 200 sources (600 items in all)",
		"inbox:console:bob":   "Now watching 100 sources (300 items in all)",
	}
	for rcpt, text := range want {
		if !strings.HasPrefix(got[rcpt], text) {
			t.Errorf("%s: %q, want %q", rcpt, got[rcpt], text)
		}
	}
	if len(got) != len(want) {
		t.Errorf("collapsed confirmations to %v, want only admin and bob", got)
	}
	for _, d := range decls[:300] {
		if _, notices := r.effects(d.ID); len(notices) != 0 {
			t.Fatalf("task %s has %d notices of its own, want none (collapsed)", d.ID, len(notices))
		}
	}
	_, notices := r.effects(alone.ID)
	if len(notices) != 1 || notices[0].Recipient != "inbox:console:carol" || deliverytest.Message(t, notices[0]).Kind != delivery.KindState ||
		!strings.Contains(deliverytest.Message(t, notices[0]).Text, "3 items") {
		t.Fatalf("the lone task's confirmation: %+v, want one to its notify recipient", notices)
	}
}

// A start-up stopped before every baseline ran sends what it has; the
// tasks still owed theirs are confirmed at the next start.
func TestI2_StopDuringBaselinesSendsTheConfirmationBegun(t *testing.T) {
	r := newRig(t)
	g := &gatedSource{gate: make(chan struct{})}
	r.setSources(tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) { return g, nil }))
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.m.SetDeclared(ctx, manyDeclared(10, "")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	deliverytest.WaitFor(t, func() bool { return g.calls.Load() >= 1 })
	g.gate <- struct{}{} // one baseline completes
	deliverytest.WaitFor(t, func() bool {
		all, _ := r.m.All(context.Background())
		for _, tk := range all {
			if tk.LastOutcome == tasks.OutcomeBaseline {
				return true
			}
		}
		return false
	})
	cancel()
	<-done
	fxs, _ := r.store.Ledger().List(context.Background(), scheduler.WatchingSource, 0)
	// A task without a name is named by its source, never by its id (SPEC §20).
	if len(fxs) != 1 || !strings.HasPrefix(deliverytest.Message(t, fxs[0]).Text, "Now watching h") || strings.Contains(deliverytest.Message(t, fxs[0]).Text, "bulk-") {
		t.Fatalf("confirmations after the stop: %d", len(fxs))
	}
}
