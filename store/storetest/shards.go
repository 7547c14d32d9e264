package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// taskInShard returns a task id that hashes to shard i of n.
func taskInShard(t *testing.T, i, n int) string {
	t.Helper()
	for k := range 10000 {
		if id := fmt.Sprintf("task-%d", k); store.ShardOf(id, n) == i {
			return id
		}
	}
	t.Fatalf("no task id found for shard %d of %d", i, n)
	return ""
}

// testShardFences proves that a scheduling epoch fences the tasks of its
// own shard only, and that a takeover of one shard stales only that
// shard's epoch (I5).
func testShardFences(t *testing.T, open Opener) {
	ctx := context.Background()
	const n = 4

	t.Run("FenceCoversOnlyItsShard", func(t *testing.T) {
		s := open(t)
		mine, other := taskInShard(t, 1, n), taskInShard(t, 2, n)
		l := must(s.Leases().Acquire(ctx, store.ShardLease(1, n), "a", time.Minute))(t)
		f := store.Fence{Lease: l.Name, Epoch: l.Epoch}
		// The records exist unfenced first (a creation is not the scheduler's).
		must(s.Catalog().Put(ctx, store.Fence{}, mine, 0, []byte("v")))(t)
		must(s.Catalog().Put(ctx, store.Fence{}, other, 0, []byte("v")))(t)

		_, err := s.Ledger().Commit(ctx, store.RunCommit{Fence: f, TaskID: mine, Snapshot: []byte("s"),
			Effects: []store.Effect{effect(mine, "k-mine", time.Time{})}})
		noErr(t, err)
		_, err = s.Ledger().Commit(ctx, store.RunCommit{Fence: f, TaskID: other, Snapshot: []byte("s"),
			Effects: []store.Effect{effect(other, "k-other", time.Time{})}})
		wantErr(t, err, store.ErrStaleEpoch)
		if _, err := s.Ledger().Get(ctx, "k-other"); err == nil {
			t.Fatal("a commit refused for its shard claimed its effect")
		}
		_, err = s.Snapshots().Get(ctx, other)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Catalog().Put(ctx, f, other, 1, []byte("w"))
		wantErr(t, err, store.ErrStaleEpoch)
		err = s.Catalog().Delete(ctx, f, other, 1)
		wantErr(t, err, store.ErrStaleEpoch)
		must(s.Catalog().Put(ctx, f, mine, 1, []byte("w")))(t)
	})

	t.Run("TakeoverStalesOnlyThatShard", func(t *testing.T) {
		s := open(t)
		t1, t2 := taskInShard(t, 0, n), taskInShard(t, 3, n)
		a1 := must(s.Leases().Acquire(ctx, store.ShardLease(0, n), "a", short))(t)
		a2 := must(s.Leases().Acquire(ctx, store.ShardLease(3, n), "a", time.Minute))(t)
		var b1 store.Lease
		waitFor(t, "shard 0 expiry", func() bool {
			var err error
			b1, err = s.Leases().Acquire(ctx, store.ShardLease(0, n), "b", time.Minute)
			return err == nil
		})
		if b1.Epoch <= a1.Epoch {
			t.Fatalf("takeover epoch %d, not above %d", b1.Epoch, a1.Epoch)
		}
		_, err := s.Ledger().Commit(ctx, store.RunCommit{Fence: store.Fence{Lease: a1.Name, Epoch: a1.Epoch}, TaskID: t1,
			Effects: []store.Effect{effect(t1, "k-stale", time.Time{})}})
		wantErr(t, err, store.ErrStaleEpoch)
		_, err = s.Ledger().Commit(ctx, store.RunCommit{Fence: store.Fence{Lease: b1.Name, Epoch: b1.Epoch}, TaskID: t1,
			Effects: []store.Effect{effect(t1, "k-new", time.Time{})}})
		noErr(t, err)
		_, err = s.Ledger().Commit(ctx, store.RunCommit{Fence: store.Fence{Lease: a2.Name, Epoch: a2.Epoch}, TaskID: t2,
			Effects: []store.Effect{effect(t2, "k-kept", time.Time{})}})
		noErr(t, err)
	})
}
