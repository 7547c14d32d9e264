package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// testRetention: ended effects past the cutoff go, with their claims;
// queued, in-flight and recent ones stay untouched.
func testRetention(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	p, ok := s.(store.Pruner)
	if !ok {
		t.Skip("backend does not prune")
	}
	l := s.Ledger()
	now := base()
	commit(t, s, "t1", effect("t1", "old-done", now), effect("t1", "old-failed", now), effect("t1", "queued", now),
		effect("t1", "flying", now), effect("t1", "new-done", now))
	for _, k := range []string{"old-done", "old-failed", "flying", "new-done"} {
		must(l.Begin(ctx, k, "w1", 0, now))(t)
	}
	must(l.Settle(ctx, "old-done", store.Outcome{State: store.Completed}, now))(t)
	must(l.Settle(ctx, "old-failed", store.Outcome{State: store.Failed, Error: "http_400"}, now))(t)
	must(l.Settle(ctx, "new-done", store.Outcome{State: store.Completed}, now.Add(2*time.Hour)))(t)

	n := 0
	for range 3 { // a pass may stop early; the cutoff falls between the two ends
		n += must(p.Prune(ctx, now.Add(time.Hour)))(t)
	}
	if n != 2 {
		t.Fatalf("pruned %d effects, want 2", n)
	}
	for _, k := range []string{"old-done", "old-failed"} {
		if _, err := l.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("pruned %s: %v", k, err)
		}
	}
	wantKeys(t, must(l.List(ctx, "t1", 0))(t), "new-done", "flying", "queued")
	wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "queued")
	// A pruned key is claimable again; the others are still claimed (I1).
	res := commit(t, s, "t1", effect("t1", "old-done", now), effect("t1", "queued", now), effect("t1", "new-done", now))
	if len(res.Claimed) != 1 || res.Claimed[0] != "old-done" || len(res.Duplicates) != 2 {
		t.Fatalf("claims after pruning = %+v", res)
	}
}

// testHookReplayWindow: a hook delivery claimed under its body's digest
// outlives a retention shorter than store.ReplayWindow, so the same body
// sent again within the window is still a duplicate; once the window
// passed it goes like any other. A hook delivery claimed under its id, and
// a task's effects, go on the retention alone.
func testHookReplayWindow(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	p, ok := s.(store.Pruner)
	if !ok {
		t.Skip("backend does not prune")
	}
	l := s.Ledger()
	now := base()
	hook := func(key string, created time.Time) store.Effect {
		fx := effect(store.HookSource+"ci", key, created)
		fx.Kind, fx.CreatedAt, fx.RunID = "inbound.event", created, store.HookSource+"ci/"+key
		return fx
	}
	old := now.Add(-store.ReplayWindow - time.Minute)
	commit(t, s, store.HookSource+"ci", hook("sha256:fresh", now.Add(-2*time.Minute)), hook("sha256:stale", old),
		hook("delivery-1", now.Add(-2*time.Minute)))
	commit(t, s, "t1", effect("t1", "news", now))
	for _, k := range []string{"sha256:fresh", "sha256:stale", "delivery-1", "news"} {
		must(l.Begin(ctx, k, "w1", 0, now.Add(-time.Minute)))(t)
		must(l.Settle(ctx, k, store.Outcome{State: store.Completed}, now.Add(-time.Minute)))(t)
	}
	// A retention of one minute, as short as it may be: everything ended
	// before the cutoff, but the fresh hook claim is kept.
	n := 0
	for range 3 {
		n += must(p.Prune(ctx, now))(t)
	}
	if n != 3 {
		t.Fatalf("pruned %d effects, want 3 (the stale digest claim, the id claim and the news)", n)
	}
	if _, err := l.Get(ctx, "sha256:fresh"); err != nil {
		t.Fatalf("the hook claim within the replay window was pruned: %v", err)
	}
	for _, k := range []string{"sha256:stale", "delivery-1", "news"} {
		if _, err := l.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s past its retention: %v, want pruned", k, err)
		}
	}
	res := commit(t, s, store.HookSource+"ci", hook("sha256:fresh", now), hook("sha256:stale", now))
	if len(res.Claimed) != 1 || res.Claimed[0] != "sha256:stale" || len(res.Duplicates) != 1 || res.Duplicates[0] != "sha256:fresh" {
		t.Fatalf("the same deliveries again: %+v; want the fresh one a duplicate, the stale one claimed anew", res)
	}
}
