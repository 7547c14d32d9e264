package store

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SchedulerLease is the lease of the one scheduling owner when scheduling
// is not divided (one shard): the embedded store, or Redis with
// store.redis.shards 1 (I5).
const SchedulerLease = "scheduler"

// ShardOf is the scheduling shard of a task among n: a hash of the task id,
// the same on every replica and every start. n < 2 is one shard (0).
func ShardOf(taskID string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(taskID))
	return int(h.Sum32() % uint32(n))
}

// ShardLease names the lease of shard i of n. One shard is the scheduler
// lease itself; with more, the name carries n so that a fence says which
// layout it was taken under ("scheduler:64:17").
func ShardLease(i, n int) string {
	if n < 2 {
		return SchedulerLease
	}
	return SchedulerLease + ":" + strconv.Itoa(n) + ":" + strconv.Itoa(i)
}

// ParseShardLease reads a name made by ShardLease. ok is false for a lease
// that is not a scheduling lease (the create lease, a poller, a worker).
func ParseShardLease(name string) (i, n int, ok bool) {
	if name == SchedulerLease {
		return 0, 1, true
	}
	rest, found := strings.CutPrefix(name, SchedulerLease+":")
	if !found {
		return 0, 0, false
	}
	ns, is, found := strings.Cut(rest, ":")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(ns)
	i, err2 := strconv.Atoi(is)
	if err1 != nil || err2 != nil || n < 2 || i < 0 || i >= n {
		return 0, 0, false
	}
	return i, n, true
}

// CheckShard refuses a write to task id under a scheduling fence of a shard
// the task is not in: an epoch is proof of owning one shard, not all of
// them (I5). Backends call it on every fenced task write, before the epoch
// check; other fences (the create lease) pass.
func CheckShard(f Fence, taskID string) error {
	if f.IsZero() {
		return nil
	}
	i, n, ok := ParseShardLease(f.Lease)
	if !ok || ShardOf(taskID, n) == i {
		return nil
	}
	return fmt.Errorf("fence of scheduling shard %d of %d does not cover task %q: %w", i, n, taskID, ErrStaleEpoch)
}

// ShardView is one replica's view of the scheduling shards after a
// balancing step.
type ShardView struct {
	Shards int
	// Live is how many replicas take part in sharing the shards.
	Live int
	// Mine are the leases this replica holds, by shard.
	Mine map[int]Lease
	// Holders names each shard's holder ("" while free).
	Holders []string
	// NextExpiry is the earliest expiry of a shard another replica holds
	// (zero when none): it may be free from then on.
	NextExpiry time.Time
}

// Counts is how many shards each holder owns.
func (v ShardView) Counts() map[string]int {
	out := map[string]int{}
	for _, h := range v.Holders {
		if h != "" {
			out[h]++
		}
	}
	return out
}

// ShardLeases divides scheduling into shards shared by the replicas of one
// store (Redis; README, Sharded scheduling), each shard with its own
// lease and fencing epoch.
type ShardLeases interface {
	// Shards is the number of shards (store.redis.shards).
	Shards() int
	// BalanceShards is one step of sharing: it renews the leases in held
	// that are still holder's (those lost are left out of the view), keeps
	// holder registered as a live replica until now+ttl, and claims free
	// shards up to holder's fair share, ceil(shards / live replicas). It
	// never releases: a replica over its share stops its runs first and
	// then calls ReleaseShards.
	BalanceShards(ctx context.Context, holder string, ttl time.Duration, held map[int]Lease) (ShardView, error)
	// ReleaseShards gives up the leases (still held at their epochs) and,
	// with leaving set, unregisters holder as a live replica: on clean
	// shutdown the others take its shards at their next step.
	ReleaseShards(ctx context.Context, holder string, leases []Lease, leaving bool) error
}

// ShardPreference orders the shards of n by holder's rendezvous score,
// highest first: a replica claims its most preferred free shards and
// releases its least preferred ones, so each replica keeps to much the
// same shards as replicas come and go.
func ShardPreference(holder string, n int) []int {
	type scored struct {
		i     int
		score uint64
	}
	s := make([]scored, n)
	for i := range s {
		h := fnv.New64a()
		_, _ = h.Write([]byte(holder + "\x00" + strconv.Itoa(i)))
		s[i] = scored{i, h.Sum64()}
	}
	slices.SortFunc(s, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	out := make([]int, n)
	for k, x := range s {
		out[k] = x.i
	}
	return out
}

// FairShare is the most shards of n one of live replicas should hold.
func FairShare(n, live int) int {
	if live < 1 {
		live = 1
	}
	return (n + live - 1) / live
}
