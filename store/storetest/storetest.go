// Package storetest is the conformance suite every store backend runs: it
// proves the guarantees documented in package store through the interfaces
// alone, so bbolt and Redis are held to exactly the same contract.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Opener returns a fresh, empty store; the backend registers its cleanup.
type Opener func(t *testing.T) store.Store

// Reopener closes old and opens the same data again.
type Reopener func(t *testing.T, old store.Store) store.Store

// Run runs the whole suite. reopen may be nil for backends that cannot
// reopen their data; the durability subtests are skipped then.
func Run(t *testing.T, open func(t *testing.T) store.Store, reopen func(t *testing.T, old store.Store) store.Store) {
	t.Run("Catalog", func(t *testing.T) { testCatalog(t, open) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, open) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open) })
	t.Run("Leases", func(t *testing.T) { testLeases(t, open) })
	t.Run("ShardFences", func(t *testing.T) { testShardFences(t, open) })
	t.Run("Dedup", func(t *testing.T) { testDedup(t, open) })
	t.Run("Buckets", func(t *testing.T) { testBuckets(t, open) })
	t.Run("Inbox", func(t *testing.T) { testInbox(t, open) })
	t.Run("Runs", func(t *testing.T) { testRuns(t, open) })
	t.Run("Dialogs", func(t *testing.T) { testKV(t, open, store.Store.Dialogs, store.Store.Channels) })
	t.Run("Channels", func(t *testing.T) { testKV(t, open, store.Store.Channels, store.Store.Dialogs) })
	t.Run("History", func(t *testing.T) { testHistory(t, open, reopen) })
	t.Run("Reopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("backend cannot reopen")
		}
		testReopen(t, open, reopen)
	})
}

// short is the TTL used where expiry must be observed with real time (a
// Redis server has no injectable clock).
const short = 50 * time.Millisecond

// waitFor polls cond until it holds, failing after a few seconds. Used
// only to observe TTL expiry on the backend's own clock.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// must unwraps a (value, error) result: must(f())(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

// base is a millisecond-aligned instant all ledger times derive from.
func base() time.Time { return time.Now().Truncate(time.Millisecond).UTC() }

func effect(task, key string, notBefore time.Time) store.Effect {
	return store.Effect{
		Key: key, TaskID: task, Recipient: "inbox:console:test", Kind: "watch.changed",
		Payload: []byte(`{"text":"` + key + `"}`), NotBefore: notBefore, RunID: "run-1",
	}
}

func commit(t *testing.T, s store.Store, task string, effects ...store.Effect) store.CommitResult {
	t.Helper()
	return must(s.Ledger().Commit(context.Background(), store.RunCommit{TaskID: task, Effects: effects}))(t)
}

func keys(es []store.Effect) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

func wantKeys(t *testing.T, got []store.Effect, want ...string) {
	t.Helper()
	if k := keys(got); !slices.Equal(k, want) && !(len(k) == 0 && len(want) == 0) {
		t.Fatalf("keys = %v, want %v", k, want)
	}
}

// ---------------------------------------------------------------- catalog

func testCatalog(t *testing.T, open Opener) {
	ctx := context.Background()
	none := store.Fence{}

	t.Run("CreateWithExpectZero", func(t *testing.T) {
		c := open(t).Catalog()
		if rev := must(c.Put(ctx, none, "t1", 0, []byte("v1")))(t); rev != 1 {
			t.Fatalf("revision = %d, want 1", rev)
		}
		_, err := c.Put(ctx, none, "t1", 0, []byte("again"))
		wantErr(t, err, store.ErrConflict)
		rec := must(c.Get(ctx, "t1"))(t)
		if rec.ID != "t1" || rec.Revision != 1 || string(rec.Value) != "v1" {
			t.Fatalf("record = %+v", rec)
		}
		_, err = c.Get(ctx, "absent")
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("CompareAndSwap", func(t *testing.T) {
		c := open(t).Catalog()
		must(c.Put(ctx, none, "t1", 0, []byte("v1")))(t)
		if rev := must(c.Put(ctx, none, "t1", 1, []byte("v2")))(t); rev != 2 {
			t.Fatalf("revision = %d, want 2", rev)
		}
		_, err := c.Put(ctx, none, "t1", 1, []byte("lost"))
		wantErr(t, err, store.ErrConflict)
		_, err = c.Put(ctx, none, "t1", 3, []byte("future"))
		wantErr(t, err, store.ErrConflict)
		if rec := must(c.Get(ctx, "t1"))(t); rec.Revision != 2 || string(rec.Value) != "v2" {
			t.Fatalf("record = %+v, want revision 2 v2", rec)
		}
	})

	t.Run("DeleteUnderCAS", func(t *testing.T) {
		s := open(t)
		c := s.Catalog()
		must(c.Put(ctx, none, "t1", 0, []byte("v1")))(t)
		must(s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap")}))(t)
		wantErr(t, c.Delete(ctx, none, "t1", 2), store.ErrConflict)
		noErr(t, c.Delete(ctx, none, "t1", 1))
		_, err := c.Get(ctx, "t1")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Snapshots().Get(ctx, "t1")
		wantErr(t, err, store.ErrNotFound)
		if err := c.Delete(ctx, none, "t1", 1); err == nil {
			t.Fatal("deleting an absent record succeeded")
		}
		// Recreating starts over at revision 1.
		if rev := must(c.Put(ctx, none, "t1", 0, []byte("again")))(t); rev != 1 {
			t.Fatalf("revision after recreate = %d, want 1", rev)
		}
	})

	t.Run("List", func(t *testing.T) {
		c := open(t).Catalog()
		if got := must(c.List(ctx))(t); len(got) != 0 {
			t.Fatalf("empty catalog lists %d records", len(got))
		}
		for _, id := range []string{"b", "a", "c"} {
			must(c.Put(ctx, none, id, 0, []byte("v-"+id)))(t)
		}
		must(c.Put(ctx, none, "a", 1, []byte("v-a2")))(t)
		got := must(c.List(ctx))(t)
		slices.SortFunc(got, func(x, y store.Record) int { return bytes.Compare([]byte(x.ID), []byte(y.ID)) })
		want := []store.Record{{ID: "a", Revision: 2, Value: []byte("v-a2")}, {ID: "b", Revision: 1, Value: []byte("v-b")}, {ID: "c", Revision: 1, Value: []byte("v-c")}}
		if len(got) != len(want) {
			t.Fatalf("list = %+v", got)
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Revision != want[i].Revision || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("list[%d] = %+v, want %+v", i, got[i], want[i])
			}
		}
	})

	t.Run("I5_StaleFenceRefused", func(t *testing.T) {
		s := open(t)
		c, l := s.Catalog(), s.Leases()
		a := must(l.Acquire(ctx, "scheduler", "replica-a", short))(t)
		fa := store.Fence{Lease: "scheduler", Epoch: a.Epoch}
		must(c.Put(ctx, fa, "t1", 0, []byte("by a")))(t)

		var b store.Lease
		waitFor(t, "lease expiry", func() bool {
			var err error
			b, err = l.Acquire(ctx, "scheduler", "replica-b", time.Minute)
			return err == nil
		})
		if b.Epoch <= a.Epoch {
			t.Fatalf("epoch after takeover = %d, want > %d", b.Epoch, a.Epoch)
		}
		_, err := c.Put(ctx, fa, "t1", 1, []byte("late a"))
		wantErr(t, err, store.ErrStaleEpoch)
		_, err = c.Put(ctx, fa, "t2", 0, []byte("late a"))
		wantErr(t, err, store.ErrStaleEpoch)
		wantErr(t, c.Delete(ctx, fa, "t1", 1), store.ErrStaleEpoch)
		_, err = s.Ledger().Commit(ctx, store.RunCommit{Fence: fa, TaskID: "t1", TaskRevision: 1,
			Snapshot: []byte("late"), Effects: []store.Effect{effect("t1", "k-late", time.Time{})}})
		wantErr(t, err, store.ErrStaleEpoch)
		_, err = s.Ledger().Get(ctx, "k-late")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Snapshots().Get(ctx, "t1")
		wantErr(t, err, store.ErrNotFound)
		if rec := must(c.Get(ctx, "t1"))(t); string(rec.Value) != "by a" {
			t.Fatalf("stale write landed: %q", rec.Value)
		}

		fb := store.Fence{Lease: "scheduler", Epoch: b.Epoch}
		must(c.Put(ctx, fb, "t1", 1, []byte("by b")))(t)
		res := must(s.Ledger().Commit(ctx, store.RunCommit{Fence: fb, TaskID: "t1", TaskRevision: 2,
			Effects: []store.Effect{effect("t1", "k-b", time.Time{})}}))(t)
		if !slices.Equal(res.Claimed, []string{"k-b"}) {
			t.Fatalf("claimed = %v", res.Claimed)
		}
		// A fence on a lease that was never taken is stale too.
		_, err = c.Put(ctx, store.Fence{Lease: "never", Epoch: 1}, "t3", 0, nil)
		wantErr(t, err, store.ErrStaleEpoch)
	})
}

// ---------------------------------------------------------------- ledger

func testLedger(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("I1_ConcurrentCommitClaimsOnce", func(t *testing.T) {
		s := open(t)
		const n = 20
		results := make([]store.CommitResult, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				results[i], errs[i] = s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1",
					Effects: []store.Effect{effect("t1", "same-key", time.Time{})}})
			})
		}
		wg.Wait()
		claimed, dups := 0, 0
		for i := range n {
			noErr(t, errs[i])
			claimed += len(results[i].Claimed)
			dups += len(results[i].Duplicates)
		}
		if claimed != 1 || dups != n-1 {
			t.Fatalf("claimed %d, duplicates %d; want 1 and %d", claimed, dups, n-1)
		}
		due := must(s.Ledger().Due(ctx, time.Now().Add(time.Hour), 0))(t)
		wantKeys(t, due, "same-key")
	})

	t.Run("I1_DuplicateUntouched", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		commit(t, s, "t1", effect("t1", "k1", time.Time{}))
		must(l.Begin(ctx, "k1", "w1", time.Now()))(t)
		must(l.Settle(ctx, "k1", store.Outcome{State: store.Completed, ProviderID: "m-1"}, time.Now()))(t)
		res := commit(t, s, "t1", effect("t1", "k1", time.Time{}), effect("t1", "k2", time.Time{}), effect("t1", "k2", time.Time{}))
		if !slices.Equal(res.Claimed, []string{"k2"}) || !slices.Equal(res.Duplicates, []string{"k1", "k2"}) {
			t.Fatalf("result = %+v", res)
		}
		if e := must(l.Get(ctx, "k1"))(t); e.State != store.Completed || e.ProviderID != "m-1" {
			t.Fatalf("duplicate claim touched the effect: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t), "k2")
	})

	t.Run("CommitStoresEffect", func(t *testing.T) {
		s := open(t)
		in := effect("t1", "k1", time.Time{})
		in.ExpiresAt = base().Add(time.Hour)
		in.State, in.InFlight, in.Worker = store.Completed, true, "forged"
		before := time.Now().Add(-time.Second)
		commit(t, s, "t1", in)
		e := must(s.Ledger().Get(ctx, "k1"))(t)
		if e.TaskID != "t1" || e.Recipient != in.Recipient || e.Kind != in.Kind || !bytes.Equal(e.Payload, in.Payload) ||
			e.RunID != "run-1" || !e.ExpiresAt.Equal(in.ExpiresAt) {
			t.Fatalf("stored effect = %+v", e)
		}
		if e.State != store.Pending || e.InFlight || e.Worker != "" || len(e.Attempts) != 0 {
			t.Fatalf("a claim starts pending and queued, got %+v", e)
		}
		if e.CreatedAt.Before(before) {
			t.Fatalf("CreatedAt = %v", e.CreatedAt)
		}
		_, err := s.Ledger().Get(ctx, "absent")
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("I5_StaleRevisionCommitsNothing", func(t *testing.T) {
		s := open(t)
		c, l := s.Catalog(), s.Ledger()
		must(c.Put(ctx, store.Fence{}, "t1", 0, []byte("v1")))(t)
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap-1")}))(t)
		must(c.Put(ctx, store.Fence{}, "t1", 1, []byte("v2")))(t)

		_, err := l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap-stale"),
			Effects: []store.Effect{effect("t1", "k1", time.Time{}), effect("t1", "k2", time.Time{})}})
		wantErr(t, err, store.ErrConflict)
		for _, k := range []string{"k1", "k2"} {
			_, err := l.Get(ctx, k)
			wantErr(t, err, store.ErrNotFound)
		}
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-1" {
			t.Fatalf("snapshot = %q after a refused commit", snap)
		}
		if due := must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t); len(due) != 0 {
			t.Fatalf("refused commit queued %v", keys(due))
		}
		// A task that does not exist has no revision to match either.
		_, err = l.Commit(ctx, store.RunCommit{TaskID: "gone", TaskRevision: 1, Effects: []store.Effect{effect("gone", "k3", time.Time{})}})
		wantErr(t, err, store.ErrConflict)

		res := must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 2, Snapshot: []byte("snap-2"),
			Effects: []store.Effect{effect("t1", "k1", time.Time{})}}))(t)
		if !slices.Equal(res.Claimed, []string{"k1"}) {
			t.Fatalf("claimed = %v", res.Claimed)
		}
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-2" {
			t.Fatalf("snapshot = %q", snap)
		}
		// Without a snapshot the stored one stays.
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", TaskRevision: 2}))(t)
		if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap-2" {
			t.Fatalf("snapshot = %q after a commit without one", snap)
		}
		_, err = s.Snapshots().Get(ctx, "other")
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("DueOrderLimitNotBefore", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		if _, ok := must2(t)(l.NextDue(ctx)); ok {
			t.Fatal("NextDue on an empty queue reports a time")
		}
		b := base().Add(time.Hour)
		commit(t, s, "t1", effect("t1", "k3", b.Add(3*time.Second)), effect("t1", "k1", b.Add(time.Second)))
		commit(t, s, "t2", effect("t2", "k2", b.Add(2*time.Second)), effect("t2", "k10", b.Add(10*time.Second)))
		wantKeys(t, must(l.Due(ctx, b, 0))(t))
		wantKeys(t, must(l.Due(ctx, b.Add(time.Second), 0))(t), "k1")
		wantKeys(t, must(l.Due(ctx, b.Add(5*time.Second), 0))(t), "k1", "k2", "k3")
		wantKeys(t, must(l.Due(ctx, b.Add(5*time.Second), 2))(t), "k1", "k2")
		wantKeys(t, must(l.Due(ctx, b.Add(time.Minute), 0))(t), "k1", "k2", "k3", "k10")
		at, ok := must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(b.Add(time.Second)) {
			t.Fatalf("NextDue = %v %v, want %v", at, ok, b.Add(time.Second))
		}
		must(l.Begin(ctx, "k1", "w1", b.Add(time.Second)))(t)
		at, ok = must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(b.Add(2*time.Second)) {
			t.Fatalf("NextDue with k1 in flight = %v %v", at, ok)
		}
		wantKeys(t, must(l.Due(ctx, b.Add(time.Minute), 0))(t), "k2", "k3", "k10")
	})

	t.Run("BeginRaceOneWinner", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		e := effect("t1", "k1", time.Time{})
		e.PartsSent = 1
		commit(t, s, "t1", e)
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, errs[i] = l.Begin(ctx, "k1", fmt.Sprintf("w%d", i), time.Now()) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrIllegalTransition):
				t.Fatalf("loser error = %v, want ErrIllegalTransition", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d Begin calls won, want 1", won)
		}
		got := must(l.Get(ctx, "k1"))(t)
		if !got.InFlight || got.State != store.Pending || got.Worker == "" || len(got.Attempts) != 1 {
			t.Fatalf("after Begin: %+v", got)
		}
		if a := got.Attempts[0]; a.N != 1 || a.By != got.Worker || a.Part != 1 || a.Outcome != store.Pending || a.Start.IsZero() {
			t.Fatalf("attempt = %+v", a)
		}
		wantKeys(t, must(l.Due(ctx, time.Now().Add(time.Hour), 0))(t))
		_, err := l.Begin(ctx, "absent", "w1", time.Now())
		wantErr(t, err, store.ErrNotFound)
	})

	t.Run("SettleRetryRequeues", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now))
		must(l.Begin(ctx, "k1", "w1", now))(t)
		retry := now.Add(time.Minute)
		e := must(l.Settle(ctx, "k1", store.Outcome{State: store.Pending, Error: "rate limited", RetryAt: retry, PartsSent: 2}, now.Add(time.Second)))(t)
		if e.State != store.Pending || e.InFlight || e.Worker != "" || !e.NotBefore.Equal(retry) || e.PartsSent != 2 || e.Error != "rate limited" {
			t.Fatalf("after retry: %+v", e)
		}
		if a := e.Attempts[0]; a.Outcome != store.Pending || !a.End.Equal(now.Add(time.Second)) || a.Error != "rate limited" {
			t.Fatalf("attempt = %+v", a)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(30*time.Second), 0))(t))
		wantKeys(t, must(l.Due(ctx, retry, 0))(t), "k1")
		if got := must(l.Get(ctx, "k1"))(t); got.PartsSent != 2 {
			t.Fatalf("PartsSent not persisted: %d", got.PartsSent)
		}
		e = must(l.Begin(ctx, "k1", "w2", retry))(t)
		if len(e.Attempts) != 2 || e.Attempts[1].N != 2 || e.Attempts[1].Part != 2 || e.Attempts[1].By != "w2" {
			t.Fatalf("second attempt = %+v", e.Attempts)
		}
		e = must(l.Settle(ctx, "k1", store.Outcome{State: store.Completed, ProviderID: "m-9", PartsSent: 3}, retry))(t)
		if e.State != store.Completed || e.ProviderID != "m-9" || e.PartsSent != 3 {
			t.Fatalf("completed: %+v", e)
		}
	})

	t.Run("SettleFinalStates", func(t *testing.T) {
		for _, final := range []store.EffectState{store.Completed, store.Failed, store.Unknown} {
			t.Run(string(final), func(t *testing.T) {
				s := open(t)
				l := s.Ledger()
				now := base()
				commit(t, s, "t1", effect("t1", "k1", now))
				_, err := l.Settle(ctx, "k1", store.Outcome{State: final}, now)
				wantErr(t, err, store.ErrIllegalTransition) // queued, not in flight
				must(l.Begin(ctx, "k1", "w1", now))(t)
				e := must(l.Settle(ctx, "k1", store.Outcome{State: final, Error: "reason"}, now))(t)
				if e.State != final || e.InFlight || e.Attempts[0].Outcome != final {
					t.Fatalf("settled: %+v", e)
				}
				_, err = l.Settle(ctx, "k1", store.Outcome{State: store.Completed}, now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Settle(ctx, "k1", store.Outcome{State: store.Pending, RetryAt: now}, now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Begin(ctx, "k1", "w2", now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Expire(ctx, "k1", "late", now)
				wantErr(t, err, store.ErrIllegalTransition)
				_, err = l.Defer(ctx, "k1", now.Add(time.Hour), "", now)
				wantErr(t, err, store.ErrIllegalTransition)
				wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t))
				if got := must(l.Get(ctx, "k1"))(t); got.State != final || len(got.Attempts) != 1 {
					t.Fatalf("refused transitions changed the effect: %+v", got)
				}
			})
		}
	})

	t.Run("SettleUnknownStateRefused", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		commit(t, s, "t1", effect("t1", "k1", time.Time{}))
		must(l.Begin(ctx, "k1", "w1", time.Now()))(t)
		_, err := l.Settle(ctx, "k1", store.Outcome{State: "sent-ish"}, time.Now())
		wantErr(t, err, store.ErrIllegalTransition)
		if got := must(l.Get(ctx, "k1"))(t); !got.InFlight {
			t.Fatalf("refused settle ended the attempt: %+v", got)
		}
	})

	t.Run("Expire", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now), effect("t1", "k2", now))
		e := must(l.Expire(ctx, "k1", "expired", now))(t)
		if e.State != store.Failed || e.Error != "expired" || len(e.Attempts) != 0 {
			t.Fatalf("expired: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "k2")
		must(l.Begin(ctx, "k2", "w1", now))(t)
		_, err := l.Expire(ctx, "k2", "expired", now)
		wantErr(t, err, store.ErrIllegalTransition)
	})

	t.Run("Defer", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "k1", now), effect("t1", "k2", now))
		until := now.Add(8 * time.Hour)
		e := must(l.Defer(ctx, "k1", until, "held", now))(t)
		if e.State != store.Pending || e.InFlight || !e.NotBefore.Equal(until) || len(e.Attempts) != 0 || e.Error != "held" {
			t.Fatalf("deferred: %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "k2")
		wantKeys(t, must(l.Due(ctx, until, 0))(t), "k2", "k1")
		must(l.Begin(ctx, "k2", "w1", now))(t)
		_, err := l.Defer(ctx, "k2", until, "", now)
		wantErr(t, err, store.ErrIllegalTransition)
		at, ok := must2(t)(l.NextDue(ctx))
		if !ok || !at.Equal(until) {
			t.Fatalf("NextDue = %v %v, want %v", at, ok, until)
		}
	})

	t.Run("Redeliver", func(t *testing.T) {
		for _, final := range []store.EffectState{store.Completed, store.Failed, store.Unknown} {
			t.Run(string(final), func(t *testing.T) {
				s := open(t)
				l := s.Ledger()
				now := base()
				commit(t, s, "t1", effect("t1", "k1", now))
				_, err := l.Redeliver(ctx, "k1", "console:admin", now)
				wantErr(t, err, store.ErrIllegalTransition) // queued
				must(l.Begin(ctx, "k1", "w1", now))(t)
				_, err = l.Redeliver(ctx, "k1", "console:admin", now)
				wantErr(t, err, store.ErrIllegalTransition) // in flight
				must(l.Settle(ctx, "k1", store.Outcome{State: final, PartsSent: 1}, now))(t)

				later := now.Add(time.Minute)
				e := must(l.Redeliver(ctx, "k1", "console:admin", later))(t)
				if e.State != store.Pending || e.InFlight || e.PartsSent != 1 {
					t.Fatalf("redelivered: %+v", e)
				}
				if n := len(e.Attempts); n < 2 || e.Attempts[n-1].By != "console:admin" {
					t.Fatalf("attempt history does not record who: %+v", e.Attempts)
				}
				wantKeys(t, must(l.Due(ctx, later, 0))(t), "k1")
				_, err = l.Redeliver(ctx, "k1", "console:admin", later)
				wantErr(t, err, store.ErrIllegalTransition) // pending again
				e = must(l.Begin(ctx, "k1", "w2", later))(t)
				if a := e.Attempts[len(e.Attempts)-1]; a.By != "w2" || a.Part != 1 {
					t.Fatalf("attempt after redelivery = %+v", a)
				}
			})
		}
	})

	t.Run("I3_RecoverTurnsDeadInFlightUnknown", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		commit(t, s, "t1", effect("t1", "dead", now), effect("t1", "live", now), effect("t1", "queued", now))
		must(l.Begin(ctx, "dead", "w-dead", now))(t)
		must(l.Begin(ctx, "live", "w-live", now))(t)
		alive := func(w string) bool { return w == "w-live" }

		got := must(l.Recover(ctx, store.Recovery{Alive: alive}, now.Add(time.Second)))(t)
		wantKeys(t, got, "dead")
		if got[0].State != store.Unknown || got[0].InFlight {
			t.Fatalf("recovered effect = %+v", got[0])
		}
		e := must(l.Get(ctx, "dead"))(t)
		if e.State != store.Unknown || e.InFlight || e.Attempts[0].Outcome != store.Unknown || e.Attempts[0].End.IsZero() {
			t.Fatalf("stored recovered effect = %+v", e)
		}
		if e := must(l.Get(ctx, "live"))(t); e.State != store.Pending || !e.InFlight || e.Worker != "w-live" {
			t.Fatalf("live worker's effect touched: %+v", e)
		}
		if e := must(l.Get(ctx, "queued"))(t); e.State != store.Pending || e.InFlight {
			t.Fatalf("queued effect touched: %+v", e)
		}
		// Unknown is never replayed automatically: only the queued one is due.
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t), "queued")
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: alive}, now.Add(2*time.Second)))(t))
	})

	t.Run("I3_CommitInFlightForAWorker", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		res := must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-1",
			Effects: []store.Effect{effect("t1", "direct", now)}}))(t)
		if len(res.Claimed) != 1 {
			t.Fatalf("claimed %v", res.Claimed)
		}
		e := must(l.Get(ctx, "direct"))(t)
		if e.State != store.Pending || !e.InFlight || e.Worker != "w-1" || len(e.Attempts) != 1 || e.Attempts[0].By != "w-1" {
			t.Fatalf("effect claimed in flight = %+v", e)
		}
		// Not queued: no other worker may take it.
		wantKeys(t, must(l.Due(ctx, now.Add(time.Hour), 0))(t))
		if _, err := l.Begin(ctx, "direct", "w-2", now); !errors.Is(err, store.ErrIllegalTransition) {
			t.Fatalf("another worker began it: %v", err)
		}
		// A second claim of the key is still refused.
		if res := commit(t, s, "t1", effect("t1", "direct", now)); len(res.Duplicates) != 1 {
			t.Fatalf("second claim: %+v", res)
		}
		done := must(l.Settle(ctx, "direct", store.Outcome{State: store.Completed, ProviderID: "p"}, now))(t)
		if done.State != store.Completed || done.InFlight {
			t.Fatalf("settled = %+v", done)
		}
		// A dead worker's directly claimed effect recovers as unknown (I3).
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-dead", Effects: []store.Effect{effect("t1", "lost", now)}}))(t)
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: func(w string) bool { return w != "w-dead" }}, now))(t), "lost")
	})

	t.Run("I3_RecoverQueuesAgainAnAttemptNeverSent", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-dead", nil)) // the worker records every send from now on
		commit(t, s, "t1", effect("t1", "sent", now), effect("t1", "unsent", now))
		must(l.Begin(ctx, "sent", "w-dead", now))(t)
		must(l.Begin(ctx, "unsent", "w-dead", now))(t)
		// A claim handed to the worker in flight, never sent either.
		must(l.Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w-dead", Effects: []store.Effect{effect("t1", "handed", now)}}))(t)
		noErr(t, l.Sending(ctx, "w-dead", []store.AttemptRef{{Key: "sent", N: 1}}))

		later := now.Add(time.Second)
		got := must(l.Recover(ctx, store.Recovery{}, later))(t)
		byKey := map[string]store.Effect{}
		for _, e := range got {
			byKey[e.Key] = e
		}
		if len(got) != 3 {
			t.Fatalf("recovered %v, want sent, unsent and handed", keys(got))
		}
		if e := byKey["sent"]; e.State != store.Unknown || e.Error != store.InterruptedUnknown {
			t.Fatalf("an attempt recorded as sending = %+v", e)
		}
		for _, k := range []string{"unsent", "handed"} {
			e := must(l.Get(ctx, k))(t)
			a := e.Attempts[len(e.Attempts)-1]
			if e.State != store.Pending || e.InFlight || a.Outcome != store.Pending || a.End.IsZero() || a.Error != store.InterruptedUnsent {
				t.Fatalf("%s: an attempt never recorded as sending = %+v", k, e)
			}
		}
		due := keys(must(l.Due(ctx, later, 0))(t))
		slices.Sort(due)
		if !slices.Equal(due, []string{"handed", "unsent"}) {
			t.Fatalf("due after recovery = %v", due)
		}
		// Sent once, after recovery: a new attempt, recorded afresh.
		e := must(l.Begin(ctx, "unsent", "w-2", later))(t)
		if n := len(e.Attempts); n != 2 || e.Attempts[1].N != 2 {
			t.Fatalf("attempts after recovery = %+v", e.Attempts)
		}
		wantKeys(t, must(l.Recover(ctx, store.Recovery{Alive: func(w string) bool { return w == "w-2" }}, later))(t))
	})

	t.Run("I3_RecoverReplaysWhereTheRecipientDedups", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-dead", nil))
		commit(t, s, "t1", effect("t1", "dedups", now), effect("t1", "plain", now))
		must(l.Begin(ctx, "dedups", "w-dead", now))(t)
		must(l.Begin(ctx, "plain", "w-dead", now))(t)
		noErr(t, l.Sending(ctx, "w-dead", []store.AttemptRef{{Key: "dedups", N: 1}, {Key: "plain", N: 1}}))
		replay := func(fx store.Effect) bool { return fx.Key == "dedups" }
		later := now.Add(time.Minute)
		got := must(l.Recover(ctx, store.Recovery{Replay: replay}, later))(t)
		if len(got) != 2 {
			t.Fatalf("recovered %v", keys(got))
		}
		e := must(l.Get(ctx, "dedups"))(t)
		if e.State != store.Pending || e.InFlight || e.Error != store.InterruptedReplayed || !e.NotBefore.Equal(now) {
			t.Fatalf("replayed effect = %+v (due at the attempt's start %v)", e, now)
		}
		if e := must(l.Get(ctx, "plain"))(t); e.State != store.Unknown {
			t.Fatalf("effect whose recipient does not dedup = %+v", e)
		}
		wantKeys(t, must(l.Due(ctx, later, 0))(t), "dedups")
	})

	t.Run("SendingRefusedOnceRecoveredAsStopped", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-slow", nil))
		commit(t, s, "t1", effect("t1", "k", now))
		must(l.Begin(ctx, "k", "w-slow", now))(t)
		wantKeys(t, must(l.Recover(ctx, store.Recovery{}, now))(t), "k")
		// The worker was only slow: it must not send what was queued again.
		wantErr(t, l.Sending(ctx, "w-slow", []store.AttemptRef{{Key: "k", N: 1}}), store.ErrLeaseLost)
		if e := must(l.Get(ctx, "k"))(t); e.State != store.Pending || e.InFlight {
			t.Fatalf("effect = %+v", e)
		}
	})

	t.Run("SettledAttemptsLeaveNoRecord", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		now := base()
		noErr(t, l.Sending(ctx, "w-1", nil))
		// Many sends, each settled: the record stays small and a later
		// crash reads only what is in flight.
		for i := range 50 {
			k := fmt.Sprintf("k%02d", i)
			commit(t, s, "t1", effect("t1", k, now))
			must(l.Begin(ctx, k, "w-1", now))(t)
			noErr(t, l.Sending(ctx, "w-1", []store.AttemptRef{{Key: k, N: 1}}))
			must(l.Settle(ctx, k, store.Outcome{State: store.Completed}, now))(t)
		}
		commit(t, s, "t1", effect("t1", "last", now))
		must(l.Begin(ctx, "last", "w-1", now))(t)
		got := must(l.Recover(ctx, store.Recovery{}, now))(t)
		wantKeys(t, got, "last")
		if got[0].State != store.Pending {
			t.Fatalf("an attempt never recorded = %+v", got[0])
		}
	})

	t.Run("ListNewestFirstPerTask", func(t *testing.T) {
		s := open(t)
		l := s.Ledger()
		for _, k := range []string{"a1", "a2", "a3"} {
			commit(t, s, "task-a", effect("task-a", k, time.Time{}))
			commit(t, s, "task-ab", effect("task-ab", k+"-other", time.Time{}))
		}
		wantKeys(t, must(l.List(ctx, "task-a", 0))(t), "a3", "a2", "a1")
		wantKeys(t, must(l.List(ctx, "task-a", 2))(t), "a3", "a2")
		wantKeys(t, must(l.List(ctx, "task-ab", 1))(t), "a3-other")
		wantKeys(t, must(l.List(ctx, "none", 0))(t))
	})
}

func must2(t *testing.T) func(time.Time, bool, error) (time.Time, bool) {
	return func(at time.Time, ok bool, err error) (time.Time, bool) {
		t.Helper()
		noErr(t, err)
		return at, ok
	}
}

// ---------------------------------------------------------------- leases

func testLeases(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("AcquireRenewHeld", func(t *testing.T) {
		l := open(t).Leases()
		_, err := l.Current(ctx, "scheduler")
		wantErr(t, err, store.ErrNotFound)
		a := must(l.Acquire(ctx, "scheduler", "a", time.Minute))(t)
		if a.Name != "scheduler" || a.Holder != "a" || a.Epoch == 0 || !a.Expires.After(time.Now()) {
			t.Fatalf("lease = %+v", a)
		}
		again := must(l.Acquire(ctx, "scheduler", "a", time.Hour))(t)
		if again.Epoch != a.Epoch || !again.Expires.After(a.Expires) {
			t.Fatalf("re-acquire by holder = %+v, want same epoch %d, later expiry", again, a.Epoch)
		}
		_, err = l.Acquire(ctx, "scheduler", "b", time.Minute)
		wantErr(t, err, store.ErrLeaseHeld)
		r := must(l.Renew(ctx, a, time.Minute))(t)
		if r.Epoch != a.Epoch || r.Holder != "a" {
			t.Fatalf("renewed = %+v", r)
		}
		cur := must(l.Current(ctx, "scheduler"))(t)
		if cur.Holder != "a" || cur.Epoch != a.Epoch {
			t.Fatalf("current = %+v", cur)
		}
		// Leases are independent by name.
		other := must(l.Acquire(ctx, "telegram-poller", "b", time.Minute))(t)
		if other.Holder != "b" {
			t.Fatalf("other lease = %+v", other)
		}
		_, err = l.Renew(ctx, store.Lease{Name: "scheduler", Holder: "a", Epoch: a.Epoch + 1}, time.Minute)
		wantErr(t, err, store.ErrLeaseLost)
	})

	t.Run("ExpiryHandsOverWithHigherEpoch", func(t *testing.T) {
		l := open(t).Leases()
		a := must(l.Acquire(ctx, "scheduler", "a", short))(t)
		var b store.Lease
		waitFor(t, "lease expiry", func() bool {
			var err error
			b, err = l.Acquire(ctx, "scheduler", "b", time.Minute)
			return err == nil
		})
		if b.Epoch <= a.Epoch || b.Holder != "b" {
			t.Fatalf("takeover = %+v after %+v", b, a)
		}
		_, err := l.Renew(ctx, a, time.Minute)
		wantErr(t, err, store.ErrLeaseLost)
		noErr(t, l.Release(ctx, a)) // no longer a's: a no-op
		if cur := must(l.Current(ctx, "scheduler"))(t); cur.Holder != "b" || cur.Epoch != b.Epoch {
			t.Fatalf("stale release changed the lease: %+v", cur)
		}
	})

	t.Run("ReleaseEpochOnlyGrows", func(t *testing.T) {
		s := open(t)
		l := s.Leases()
		var last uint64
		for i, holder := range []string{"a", "a", "b", "a"} {
			cur := must(l.Acquire(ctx, "scheduler", holder, time.Minute))(t)
			if cur.Epoch <= last {
				t.Fatalf("acquisition %d epoch %d, previous %d", i, cur.Epoch, last)
			}
			last = cur.Epoch
			noErr(t, l.Release(ctx, cur))
			_, err := l.Renew(ctx, cur, time.Minute)
			wantErr(t, err, store.ErrLeaseLost)
		}
		// A released lease fences nothing.
		_, err := s.Catalog().Put(ctx, store.Fence{Lease: "scheduler", Epoch: last}, "x", 0, nil)
		wantErr(t, err, store.ErrStaleEpoch)
	})
}

// ---------------------------------------------------------------- dedup

func testDedup(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("FirstThenSeen", func(t *testing.T) {
		d := open(t).Dedup()
		if first := must(d.Mark(ctx, "telegram", "1001", time.Hour))(t); !first {
			t.Fatal("first mark reported seen")
		}
		if first := must(d.Mark(ctx, "telegram", "1001", time.Hour))(t); first {
			t.Fatal("second mark reported first")
		}
		if first := must(d.Mark(ctx, "hooks/ci", "1001", time.Hour))(t); !first {
			t.Fatal("namespaces collide")
		}
	})
	t.Run("TTLExpiry", func(t *testing.T) {
		d := open(t).Dedup()
		must(d.Mark(ctx, "ns", "id", short))(t)
		waitFor(t, "dedup expiry", func() bool { return must(d.Mark(ctx, "ns", "id", short))(t) })
	})
}

// ---------------------------------------------------------------- buckets

func testBuckets(t *testing.T, open Opener) {
	ctx := context.Background()
	const every, burst = 6 * time.Second, 10
	t.Run("BurstThenOneEveryInterval", func(t *testing.T) {
		b := open(t).Buckets()
		now := base()
		for i := range burst {
			if w := must(b.Take(ctx, "robot-a", every, burst, now))(t); w != 0 {
				t.Fatalf("take %d of a full bucket waits %v", i+1, w)
			}
		}
		if w := must(b.Take(ctx, "robot-a", every, burst, now))(t); w != every {
			t.Fatalf("empty bucket: wait %v, want %v", w, every)
		}
		// A refused take takes nothing: the wait only shrinks with time.
		if w := must(b.Take(ctx, "robot-a", every, burst, now.Add(2*time.Second)))(t); w != 4*time.Second {
			t.Fatalf("2s later: wait %v, want 4s", w)
		}
		if w := must(b.Take(ctx, "robot-a", every, burst, now.Add(every)))(t); w != 0 {
			t.Fatalf("one interval later: wait %v, want a token", w)
		}
		if w := must(b.Take(ctx, "robot-b", every, burst, now))(t); w != 0 {
			t.Fatalf("buckets share tokens: robot-b waits %v", w)
		}
	})
	t.Run("NeverMoreThanBurstPlusRefillInAWindow", func(t *testing.T) {
		b := open(t).Buckets()
		now, taken := base(), 0
		for step := time.Duration(0); step <= time.Minute; step += 500 * time.Millisecond {
			for must(b.Take(ctx, "r", every, burst, now.Add(step)))(t) == 0 {
				taken++
			}
		}
		if want := burst + int(time.Minute/every); taken != want {
			t.Fatalf("took %d tokens in one minute, want %d", taken, want)
		}
	})
	t.Run("ConcurrentTakersShareTheTokens", func(t *testing.T) {
		st := open(t)
		now := base()
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := 0
		for range 4 * burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w, err := st.Buckets().Take(ctx, "shared", every, burst, now); err == nil && w == 0 {
					mu.Lock()
					got++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if got != burst {
			t.Fatalf("%d concurrent takers got %d tokens, want %d", 4*burst, got, burst)
		}
	})
}

// ---------------------------------------------------------------- runs

func testRuns(t *testing.T, open Opener) {
	ctx := context.Background()
	r := open(t).Runs()
	for i := 1; i <= 5; i++ {
		noErr(t, r.Append(ctx, "t1", []byte(fmt.Sprint("run", i)), 3))
	}
	noErr(t, r.Append(ctx, "t2", []byte("other"), 3))
	str := func(bs [][]byte) []string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = string(b)
		}
		return out
	}
	if got := str(must(r.List(ctx, "t1", 0))(t)); !slices.Equal(got, []string{"run5", "run4", "run3"}) {
		t.Fatalf("kept = %v", got)
	}
	if got := str(must(r.List(ctx, "t1", 2))(t)); !slices.Equal(got, []string{"run5", "run4"}) {
		t.Fatalf("limit 2 = %v", got)
	}
	if got := str(must(r.List(ctx, "t2", 0))(t)); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("other task = %v", got)
	}
	if got := must(r.List(ctx, "none", 0))(t); len(got) != 0 {
		t.Fatalf("unknown task = %v", str(got))
	}
	// A smaller keep trims on the next append.
	noErr(t, r.Append(ctx, "t1", []byte("run6"), 1))
	if got := str(must(r.List(ctx, "t1", 0))(t)); !slices.Equal(got, []string{"run6"}) {
		t.Fatalf("after keep 1 = %v", got)
	}
}

// ---------------------------------------------------------------- kv

func testKV(t *testing.T, open Opener, obj, other func(store.Store) store.KV) {
	ctx := context.Background()
	t.Run("GetPutDelete", func(t *testing.T) {
		kv := obj(open(t))
		_, err := kv.Get(ctx, "chat:1")
		wantErr(t, err, store.ErrNotFound)
		noErr(t, kv.Put(ctx, "chat:1", []byte("v1"), 0))
		noErr(t, kv.Put(ctx, "chat:1", []byte("v2"), 0))
		if v := must(kv.Get(ctx, "chat:1"))(t); string(v) != "v2" {
			t.Fatalf("value = %q", v)
		}
		noErr(t, kv.Delete(ctx, "chat:1"))
		_, err = kv.Get(ctx, "chat:1")
		wantErr(t, err, store.ErrNotFound)
		noErr(t, kv.Delete(ctx, "chat:1"))
	})
	t.Run("TTLExpiry", func(t *testing.T) {
		kv := obj(open(t))
		noErr(t, kv.Put(ctx, "short", []byte("v"), short))
		noErr(t, kv.Put(ctx, "forever", []byte("v"), 0))
		waitFor(t, "entry expiry", func() bool {
			_, err := kv.Get(ctx, "short")
			return errors.Is(err, store.ErrNotFound)
		})
		if v := must(kv.Get(ctx, "forever"))(t); string(v) != "v" {
			t.Fatalf("entry without ttl = %q", v)
		}
		// Putting again revives the key with a fresh ttl.
		noErr(t, kv.Put(ctx, "short", []byte("again"), time.Hour))
		if v := must(kv.Get(ctx, "short"))(t); string(v) != "again" {
			t.Fatalf("revived = %q", v)
		}
	})
	t.Run("DistinctObject", func(t *testing.T) {
		s := open(t)
		noErr(t, obj(s).Put(ctx, "same", []byte("mine"), 0))
		_, err := other(s).Get(ctx, "same")
		wantErr(t, err, store.ErrNotFound)
		noErr(t, other(s).Put(ctx, "same", []byte("theirs"), 0))
		noErr(t, other(s).Delete(ctx, "same"))
		if v := must(obj(s).Get(ctx, "same"))(t); string(v) != "mine" {
			t.Fatalf("value = %q", v)
		}
	})
}

// ---------------------------------------------------------------- reopen

func testReopen(t *testing.T, open Opener, reopen Reopener) {
	ctx := context.Background()
	s := open(t)
	now := base()

	must(s.Catalog().Put(ctx, store.Fence{}, "t1", 0, []byte("task")))(t)
	lease := must(s.Leases().Acquire(ctx, "scheduler", "a", time.Hour))(t)
	fence := store.Fence{Lease: "scheduler", Epoch: lease.Epoch}
	must(s.Ledger().Commit(ctx, store.RunCommit{Fence: fence, TaskID: "t1", TaskRevision: 1, Snapshot: []byte("snap"),
		Effects: []store.Effect{effect("t1", "queued", now), effect("t1", "done", now), effect("t1", "flying", now)}}))(t)
	must(s.Ledger().Begin(ctx, "done", "w1", now))(t)
	must(s.Ledger().Settle(ctx, "done", store.Outcome{State: store.Completed, ProviderID: "m-1", PartsSent: 2}, now))(t)
	noErr(t, s.Ledger().Sending(ctx, "w1", nil))
	must(s.Ledger().Begin(ctx, "flying", "w1", now))(t)
	noErr(t, s.Ledger().Sending(ctx, "w1", []store.AttemptRef{{Key: "flying", N: 1}}))
	must(s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Worker: "w1", Effects: []store.Effect{effect("t1", "handed", now)}}))(t)
	it := must(appended(s.Inbox().Append(ctx, item("console:ops", "done", "hello"), 0)))(t)
	noErr(t, s.Runs().Append(ctx, "t1", []byte("run-1"), 30))
	noErr(t, s.Dialogs().Put(ctx, "chat:1", []byte("dialog"), time.Hour))
	noErr(t, s.Channels().Put(ctx, "telegram:offset", []byte("42"), 0))
	must(s.Dedup().Mark(ctx, "telegram", "7", time.Hour))(t)

	s = reopen(t, s)

	if rec := must(s.Catalog().Get(ctx, "t1"))(t); rec.Revision != 1 || string(rec.Value) != "task" {
		t.Fatalf("catalog = %+v", rec)
	}
	if snap := must(s.Snapshots().Get(ctx, "t1"))(t); string(snap) != "snap" {
		t.Fatalf("snapshot = %q", snap)
	}
	if e := must(s.Ledger().Get(ctx, "done"))(t); e.State != store.Completed || e.ProviderID != "m-1" || e.PartsSent != 2 || len(e.Attempts) != 1 {
		t.Fatalf("completed effect = %+v", e)
	}
	wantKeys(t, must(s.Ledger().Due(ctx, now.Add(time.Hour), 0))(t), "queued")
	wantKeys(t, must(s.Ledger().List(ctx, "t1", 0))(t), "handed", "flying", "done", "queued")
	// I1 across restarts: the same keys cannot be claimed again.
	res := must(s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Effects: []store.Effect{effect("t1", "done", now), effect("t1", "queued", now)}}))(t)
	if len(res.Claimed) != 0 || len(res.Duplicates) != 2 {
		t.Fatalf("claims after reopen = %+v", res)
	}
	// I3 across restarts: the interrupted attempt recorded as sending
	// becomes unknown; the one never sent is queued again.
	rec := must(s.Ledger().Recover(ctx, store.Recovery{Alive: func(string) bool { return false }}, now))(t)
	states := map[string]store.EffectState{}
	for _, e := range rec {
		states[e.Key] = e.State
	}
	if len(rec) != 2 || states["flying"] != store.Unknown || states["handed"] != store.Pending {
		t.Fatalf("recovered after reopen = %v", states)
	}

	if got := must(s.Inbox().List(ctx, "console:ops", store.InboxQuery{}))(t); len(got) != 1 || got[0].ID != it.ID {
		t.Fatalf("inbox = %+v", got)
	}
	if n := must(s.Inbox().Unread(ctx, "console:ops"))(t); n != 1 {
		t.Fatalf("unread = %d", n)
	}
	if again := must(appended(s.Inbox().Append(ctx, item("console:ops", "done", "hello"), 0)))(t); again.ID != it.ID {
		t.Fatal("inbox idempotency lost on reopen")
	}
	if runs := must(s.Runs().List(ctx, "t1", 0))(t); len(runs) != 1 || string(runs[0]) != "run-1" {
		t.Fatalf("runs = %q", runs)
	}
	if v := must(s.Dialogs().Get(ctx, "chat:1"))(t); string(v) != "dialog" {
		t.Fatalf("dialog = %q", v)
	}
	if v := must(s.Channels().Get(ctx, "telegram:offset"))(t); string(v) != "42" {
		t.Fatalf("channel = %q", v)
	}
	if first := must(s.Dedup().Mark(ctx, "telegram", "7", time.Hour))(t); first {
		t.Fatal("dedup mark lost on reopen")
	}
	cur := must(s.Leases().Current(ctx, "scheduler"))(t)
	if cur.Holder != "a" || cur.Epoch != lease.Epoch {
		t.Fatalf("lease = %+v", cur)
	}
	_, err := s.Leases().Acquire(ctx, "scheduler", "b", time.Minute)
	wantErr(t, err, store.ErrLeaseHeld)
	noErr(t, s.Leases().Release(ctx, cur))
	s = reopen(t, s)
	next := must(s.Leases().Acquire(ctx, "scheduler", "b", time.Minute))(t)
	if next.Epoch <= lease.Epoch {
		t.Fatalf("epoch after release and reopen = %d, want > %d", next.Epoch, lease.Epoch)
	}
	noErr(t, s.Ping(ctx))
}
