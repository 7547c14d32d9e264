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
	t.Run("HookReplayWindow", func(t *testing.T) { testHookReplayWindow(t, open) })
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
	must(s.Ledger().Begin(ctx, "done", "w1", 0, now))(t)
	must(s.Ledger().Settle(ctx, "done", store.Outcome{State: store.Completed, ProviderID: "m-1", PartsSent: 2}, now))(t)
	noErr(t, s.Ledger().Sending(ctx, "w1", nil))
	must(s.Ledger().Begin(ctx, "flying", "w1", 0, now))(t)
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
