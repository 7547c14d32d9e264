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
