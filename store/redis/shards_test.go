package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// shardReplica is one replica's side of the balancing, as the scheduler
// drives it: a step, then the release of whatever is over its fair share.
type shardReplica struct {
	s      *Store
	holder string
	held   map[int]store.Lease
}

func (r *shardReplica) step(t *testing.T) store.ShardView {
	t.Helper()
	v, err := r.s.BalanceShards(context.Background(), r.holder, time.Second, r.held)
	if err != nil {
		t.Fatalf("%s: balance: %v", r.holder, err)
	}
	r.held = v.Mine
	if extra := len(v.Mine) - store.FairShare(v.Shards, v.Live); extra > 0 {
		pref := store.ShardPreference(r.holder, v.Shards)
		var out []store.Lease
		for k := len(pref) - 1; k >= 0 && len(out) < extra; k-- {
			if l, ok := r.held[pref[k]]; ok {
				out = append(out, l)
				delete(r.held, pref[k])
			}
		}
		if err := r.s.ReleaseShards(context.Background(), r.holder, out, false); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// owners reads who holds each shard straight from the lease records.
func owners(t *testing.T, s *Store, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range n {
		l, err := s.Leases().Current(context.Background(), store.ShardLease(i, n))
		if err == nil && l.Holder != "" && s.now().Before(l.Expires) {
			out[i] = l.Holder
		}
	}
	return out
}

func counts(hs []string) map[string]int {
	out := map[string]int{}
	for _, h := range hs {
		out[h]++
	}
	return out
}

// TestI5_ShardsSharedEvenlyAndTakenOverFromTheDead: three replicas share 64
// shards, each shard held by exactly one; when one stops renewing, the
// others hold its shards as soon as its leases run out, under new epochs;
// one that leaves hands its shards over at once.
func TestI5_ShardsSharedEvenlyAndTakenOverFromTheDead(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	prefix := newPrefix(t)
	const n = 64
	open := func() *Store {
		s, err := Open(context.Background(), testURL(t), Options{KeyPrefix: prefix, Now: clock.Now, Shards: n})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a := &shardReplica{s: open(), holder: "a"}
	b := &shardReplica{s: open(), holder: "b"}
	c := &shardReplica{s: open(), holder: "c"}
	for range 3 {
		for _, r := range []*shardReplica{a, b, c} {
			r.step(t)
		}
	}
	got := counts(owners(t, a.s, n))
	if got[""] != 0 || got["a"]+got["b"]+got["c"] != n || got["a"] == 0 || got["b"] == 0 || got["c"] == 0 {
		t.Fatalf("shards per holder %v, want all %d held, each replica some", got, n)
	}
	for _, r := range []*shardReplica{a, b, c} {
		if len(r.held) > store.FairShare(n, 3) {
			t.Fatalf("%s holds %d, over its fair share %d", r.holder, len(r.held), store.FairShare(n, 3))
		}
	}

	// c dies: a and b keep renewing; c's leases and its registration end together.
	dead := c.held
	clock.Advance(600 * time.Millisecond)
	a.step(t)
	b.step(t)
	if got := counts(owners(t, a.s, n)); got["c"] != len(dead) {
		t.Fatalf("before c's leases ran out the others took some: %v", got)
	}
	clock.Advance(500 * time.Millisecond) // past c's expiry, within a's and b's
	a.step(t)
	b.step(t)
	got = counts(owners(t, a.s, n))
	if got["a"]+got["b"] != n {
		t.Fatalf("after c's leases ran out: %v, want all %d held by a and b", got, n)
	}
	for i, old := range dead {
		l, _ := a.s.Leases().Current(context.Background(), store.ShardLease(i, n))
		if l.Epoch <= old.Epoch {
			t.Fatalf("shard %d taken over at epoch %d, not above c's %d", i, l.Epoch, old.Epoch)
		}
	}

	// b leaves cleanly: a takes everything at its next step.
	var bl []store.Lease
	for _, l := range b.held {
		bl = append(bl, l)
	}
	if err := b.s.ReleaseShards(context.Background(), "b", bl, true); err != nil {
		t.Fatal(err)
	}
	if v := a.step(t); len(v.Mine) != n || v.Live != 1 {
		t.Fatalf("after b left a holds %d of %d with %d live", len(v.Mine), n, v.Live)
	}
}

// TestI5_ShardCountChangesOnlyWhenNoReplicaHoldsTheOldOnes: a replica
// configured with another shard count claims nothing while a replica of the
// old count holds shards, and takes over once they are released; the old
// epochs fence nothing afterwards.
func TestI5_ShardCountChangesOnlyWhenNoReplicaHoldsTheOldOnes(t *testing.T) {
	prefix := newPrefix(t)
	ctx := context.Background()
	clock := &fakeClock{t: time.Now()}
	oldS, err := Open(ctx, testURL(t), Options{KeyPrefix: prefix, Shards: 4, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer oldS.Close()
	newS, err := Open(ctx, testURL(t), Options{KeyPrefix: prefix, Shards: 8, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer newS.Close()
	v, err := oldS.BalanceShards(ctx, "old", time.Minute, nil)
	if err != nil || len(v.Mine) != 4 {
		t.Fatalf("old replica: %d shards, %v", len(v.Mine), err)
	}
	if _, err := newS.BalanceShards(ctx, "new", time.Minute, nil); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("new replica while the old one holds shards: %v, want ErrLeaseHeld", err)
	}
	if _, err := oldS.BalanceShards(ctx, "old", time.Minute, v.Mine); err != nil {
		t.Fatalf("old replica keeps its shards: %v", err)
	}
	// The old replica releases all but one shard, whose lease then lapses
	// while the replica is only paused.
	var keep store.Lease
	var rest []store.Lease
	for i, l := range v.Mine {
		if i == 0 {
			keep = l
		} else {
			rest = append(rest, l)
		}
	}
	if err := oldS.ReleaseShards(ctx, "old", rest, true); err != nil {
		t.Fatal(err)
	}
	if _, err := oldS.Leases().Renew(ctx, keep, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	nv, err := newS.BalanceShards(ctx, "new", time.Minute, nil)
	if err != nil || len(nv.Mine) != 8 {
		t.Fatalf("new replica after the old stopped: %d shards, %v", len(nv.Mine), err)
	}
	task := ""
	for k := 0; task == ""; k++ {
		if id := fmt.Sprintf("t-%d", k); store.ShardOf(id, 4) == 0 {
			task = id
		}
	}
	_, err = oldS.Ledger().Commit(ctx, store.RunCommit{Fence: store.Fence{Lease: keep.Name, Epoch: keep.Epoch}, TaskID: task,
		Effects: []store.Effect{effect(task, "k-old")}})
	if !errors.Is(err, store.ErrStaleEpoch) {
		t.Fatalf("commit under the old layout's epoch: %v, want ErrStaleEpoch", err)
	}
	if _, err := oldS.BalanceShards(ctx, "old", time.Minute, map[int]store.Lease{0: keep}); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("old replica back after the change: %v, want ErrLeaseHeld (it waits)", err)
	}
	// A process that knows only the one scheduler lease cannot take it
	// while scheduling is divided.
	if _, err := newS.Leases().Acquire(ctx, store.SchedulerLease, "single", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("plain scheduler lease while divided: %v, want ErrLeaseHeld", err)
	}
	// Back to one shard once the divided replicas leave: the one lease is
	// free again.
	var all []store.Lease
	for _, l := range nv.Mine {
		all = append(all, l)
	}
	if err := newS.ReleaseShards(ctx, "new", all, true); err != nil {
		t.Fatal(err)
	}
	one, err := Open(ctx, testURL(t), Options{KeyPrefix: prefix, Shards: 1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if v, err := one.BalanceShards(ctx, "single", time.Minute, nil); err != nil || v.Mine[0].Name != store.SchedulerLease {
		t.Fatalf("one shard after the divided replicas left: %+v, %v", v.Mine, err)
	}
}
