package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Scheduling is divided into shards by task id (I5; README, Sharded scheduling): each
// shard has its own lease and fencing epoch, and this replica plans and
// runs only the tasks of the shards it holds. On the embedded store there
// is one shard, the scheduler lease. A shard's runs are started under its
// context: losing the shard cancels them, and their commits carry its
// fence, which the store checks against the task's shard.

// SchedulerLease is the lease of the one scheduling owner when scheduling
// is not divided (I5).
const SchedulerLease = store.SchedulerLease

// ownedShard is one shard this replica holds.
type ownedShard struct {
	lease  store.Lease
	ctx    context.Context // runs of the shard's tasks; ends when the shard is lost
	cancel context.CancelFunc
}

// ownership is the shards this replica owns.
type ownership struct {
	mu    sync.Mutex
	n     int // shard count; 0 before Run (one shard)
	mine  map[int]*ownedShard
	view  store.ShardView // the last balancing step's view
	stale bool            // ownership changed: the loop re-plans every task
}

// count is the shard count (mu held).
func (s *ownership) count() int {
	if s.n < 1 {
		return 1
	}
	return s.n
}

func (s *ownership) setCount(n int) {
	s.mu.Lock()
	s.n = n
	s.mu.Unlock()
}

func (s *ownership) shardCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count()
}

func (s *ownership) setView(v store.ShardView) {
	s.mu.Lock()
	s.view = v
	s.mu.Unlock()
}

// runContext is the context runs of task id start under, nil while this
// replica does not own its shard.
func (s *ownership) runContext(id string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh, ok := s.mine[store.ShardOf(id, s.count())]; ok {
		return sh.ctx
	}
	return nil
}

// fence is the fence a commit for task id carries (zero: not the owner).
func (s *ownership) fence(id string) store.Fence {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh, ok := s.mine[store.ShardOf(id, s.count())]; ok {
		return store.Fence{Lease: sh.lease.Name, Epoch: sh.lease.Epoch}
	}
	return store.Fence{}
}

// shardOf is the shard f fences, -1 when this replica holds none under it.
func (s *ownership) shardOf(f store.Fence) int {
	if f.IsZero() {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sh := range s.mine {
		if sh.lease.Name == f.Lease && sh.lease.Epoch == f.Epoch {
			return i
		}
	}
	return -1
}

// owns reports whether f is still the fence of a shard this replica holds.
func (s *ownership) owns(f store.Fence) bool { return s.shardOf(f) >= 0 }

// gain records shard i as held under l, its runs under parent.
func (s *ownership) gain(parent context.Context, i int, l store.Lease) {
	ctx, cancel := context.WithCancel(parent)
	s.mu.Lock()
	if s.mine == nil {
		s.mine = map[int]*ownedShard{}
	}
	s.mine[i] = &ownedShard{lease: l, ctx: ctx, cancel: cancel}
	s.stale = true
	s.mu.Unlock()
}

// take removes shard i, returning what was held.
func (s *ownership) take(i int) (*ownedShard, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.mine[i]
	if ok {
		delete(s.mine, i)
		s.stale = true
	}
	return sh, ok
}

// replanDue reports (once) that ownership changed since the loop last
// planned, so every task must be planned again or dropped.
func (s *ownership) replanDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stale := s.stale
	s.stale = false
	return stale
}

// held is a copy of the leases this replica holds, by shard.
func (s *ownership) held() map[int]store.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]store.Lease, len(s.mine))
	for i, sh := range s.mine {
		out[i] = sh.lease
	}
	return out
}

// renewed records a renewal's new expiry.
func (s *ownership) renewed(i int, l store.Lease) {
	s.mu.Lock()
	if sh, ok := s.mine[i]; ok {
		sh.lease.Expires = l.Expires
	}
	s.mu.Unlock()
}

// status is this replica's share of scheduling.
func (s *ownership) status() ShardStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ShardStatus{Shards: s.count(), Mine: []int{}, Live: s.view.Live, Owners: s.view.Counts()}
	for i := range s.mine {
		st.Mine = append(st.Mine, i)
	}
	slices.Sort(st.Mine)
	return st
}

// owner reports whether this replica owns any shard, and, with one
// shard, its epoch.
func (s *ownership) owner() (bool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var epoch uint64
	if sh, ok := s.mine[0]; ok && s.count() == 1 {
		epoch = sh.lease.Epoch
	}
	return len(s.mine) > 0, epoch
}

// ShardStatus is this replica's share of scheduling.
type ShardStatus struct {
	Shards int            `json:"shards"`
	Mine   []int          `json:"mine"`
	Live   int            `json:"live,omitempty"`
	Owners map[string]int `json:"owners,omitempty"` // shards per replica, as of the last step
}

// Shards reports the shards this replica owns and, as far as it knows,
// how many each replica owns.
func (s *Scheduler) Shards() ShardStatus { return s.shards.status() }

// Owner reports whether this replica owns scheduling of any shard now,
// and, with one shard, its epoch.
func (s *Scheduler) Owner() (bool, uint64) { return s.shards.owner() }

// mine reports whether this replica schedules task id now: the seam the
// scheduling loop asks before it plans or starts a run.
func (s *Scheduler) mine(id string) bool { return s.runContext(id) != nil }

// Schedules reports whether this replica owns the scheduling shard of
// task id now: what it keeps for the task on its own disk (course
// downloads) is written here.
func (s *Scheduler) Schedules(id string) bool { return s.mine(id) }

// runContext is the context runs of task id start under, nil while this
// replica does not own its shard.
func (s *Scheduler) runContext(id string) context.Context { return s.shards.runContext(id) }

// drop stops owning shard i: its runs are cancelled and its tasks no
// longer planned here. It returns the lease it held.
func (s *Scheduler) drop(i int) (store.Lease, bool) {
	sh, ok := s.shards.take(i)
	if !ok {
		return store.Lease{}, false
	}
	sh.cancel()
	s.poke()
	return sh.lease, true
}

// Relinquish stops owning the shard of f at once when a commit under f
// was refused for a stale epoch: another replica owns it now (I5), and
// this one must not keep running its checks until the next step notices.
func (s *Scheduler) Relinquish(f store.Fence) {
	if i := s.shards.shardOf(f); i >= 0 {
		s.drop(i)
	}
	s.log.Warn().Str("lease", f.Lease).Uint64("epoch", f.Epoch).Msg("scheduling epoch is stale; stopped owning")
}

// shardLeases is how this replica shares the shards: the store's own
// balancing when it divides scheduling (Redis), else the one scheduler lease.
func (s *Scheduler) shardLeases() store.ShardLeases {
	if s.o.Shards != nil {
		return s.o.Shards
	}
	if sl, ok := s.store.(store.ShardLeases); ok {
		return sl
	}
	return oneShard{s.store.Leases()}
}

// balance keeps this replica's share of the shards while ctx lives: one
// step every quarter lease TTL, and one as soon as another replica's
// lease may have run out, so a dead replica's shards are taken over
// within one TTL. On return every shard is handed back.
func (s *Scheduler) balance(ctx context.Context, sl store.ShardLeases) {
	s.shards.setCount(sl.Shards())
	step := s.o.LeaseTTL / 4
	for ctx.Err() == nil {
		wait := step
		held := s.shards.held()
		sctx, scancel := context.WithTimeout(ctx, callLimit(step, held))
		v, err := sl.BalanceShards(sctx, s.o.Holder, s.o.LeaseTTL, held)
		scancel()
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn().Err(err).Msg("cannot keep the scheduling shards; retrying")
			// Stop each shard the moment its lease runs out unrenewed:
			// another replica may take it from then on.
			if at, ok := s.expire(); ok && at > 0 && at < wait {
				wait = at
			}
		case err == nil:
			s.apply(ctx, sl, v)
			// A replica that stopped renewing leaves the live ones, and
			// its shards come free, when its leases run out: step then.
			if at := v.NextExpiry.Sub(s.clock.Now()) + time.Millisecond; at > 0 && at < wait {
				wait = at
			}
			// Below its share while another replica is over it, a
			// replica looks again soon: that one releases its extras at
			// its own next step.
			if releasing(v, s.o.Holder) && step/5 < wait {
				wait = step / 5
			}
		}
		select {
		case <-ctx.Done():
		case <-s.clock.After(wait):
		}
	}
	s.handBack(sl)
}

// callLimit bounds one balancing step: a store that does not answer must
// not keep this replica owning past its leases' end (the store's clock,
// which is the wall clock), nor past the next step.
func callLimit(step time.Duration, held map[int]store.Lease) time.Duration {
	limit := step
	for _, l := range held {
		if left := time.Until(l.Expires); left < limit {
			limit = max(left, time.Millisecond)
		}
	}
	return limit
}

// releasing reports whether holder is below its fair share while another
// replica holds more than its own.
func releasing(v store.ShardView, holder string) bool {
	share := store.FairShare(v.Shards, v.Live)
	if len(v.Mine) >= share {
		return false
	}
	for h, n := range v.Counts() {
		if h != holder && n > share {
			return true
		}
	}
	return false
}

// apply brings local ownership in line with a balancing step: shards lost
// stop, shards gained start with a recovery (I3, I4), and shards beyond the
// fair share are stopped and then released for the others to take.
func (s *Scheduler) apply(ctx context.Context, sl store.ShardLeases, v store.ShardView) {
	held := s.shards.held()
	var lost, won []int
	for i, l := range held {
		if nl, ok := v.Mine[i]; !ok || nl.Epoch != l.Epoch {
			s.drop(i)
			lost = append(lost, i)
		}
	}
	for i, l := range v.Mine {
		if old, ok := held[i]; ok && old.Epoch == l.Epoch {
			s.shards.renewed(i, l)
			continue
		}
		s.shards.gain(ctx, i, l)
		won = append(won, i)
	}
	gained := len(won) > 0
	if len(lost) > 0 {
		slices.Sort(lost)
		s.log.Warn().Ints("shards", lost).Msg("lost scheduling shards; their runs are cancelled")
	}
	if gained {
		slices.Sort(won)
		s.log.Info().Ints("shards", won).Int("owned", len(v.Mine)).Int("of", v.Shards).Msg("owning scheduling")
	}
	if extra := len(v.Mine) - store.FairShare(v.Shards, v.Live); extra > 0 {
		for _, i := range s.release(sl, extra) {
			v.Holders[i] = ""
		}
	}
	s.shards.setView(v)
	// Replicas die while this one owns, too: the keeper of shard 0 ends
	// their in-flight attempts now, not at the next takeover (I3).
	if _, first := v.Mine[0]; gained || first {
		if err := s.recover(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("recovery of interrupted pushes failed; will retry")
		}
	}
	if gained {
		s.poke()
	}
}

// expire stops owning the shards whose leases ran out while no step could
// renew them: another replica may hold them now. It returns how long until
// the next of the others runs out (ok false: none left).
func (s *Scheduler) expire() (next time.Duration, ok bool) {
	now := s.clock.Now()
	for i, l := range s.shards.held() {
		if left := l.Expires.Sub(now); left > 0 {
			if !ok || left < next {
				next, ok = left, true
			}
			continue
		}
		s.drop(i)
		s.log.Warn().Int("shard", i).Msg("scheduling shard expired without renewal; its runs are cancelled")
	}
	return next, ok
}

// release hands extra shards (the least preferred) to the other replicas:
// their runs stop first, so a task's runs never overlap across replicas.
func (s *Scheduler) release(sl store.ShardLeases, extra int) []int {
	held := s.shards.held()
	pref := store.ShardPreference(s.o.Holder, sl.Shards())
	var out []store.Lease
	var shards []int
	for k := len(pref) - 1; k >= 0 && len(out) < extra; k-- {
		if _, ok := held[pref[k]]; !ok {
			continue
		}
		if l, ok := s.drop(pref[k]); ok {
			out, shards = append(out, l), append(shards, pref[k])
		}
	}
	if !s.waitShardRuns(shards) {
		// A run that has not stopped yet must not meet the next owner's
		// run of its task: these shards are not handed over but left to
		// expire, which gives it the rest of the lease to stop.
		s.log.Warn().Ints("shards", shards).Msg("runs still stopping; extra scheduling shards left to expire")
		return shards
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.LeaseTTL/4)
	defer cancel()
	if err := sl.ReleaseShards(ctx, s.o.Holder, out, false); err != nil {
		s.log.Warn().Err(err).Msg("cannot release extra scheduling shards; they expire instead")
		return shards
	}
	s.log.Info().Ints("shards", shards).Msg("handed scheduling shards to other replicas")
	return shards
}

// handBack gives every shard up on shutdown, once their runs ended.
func (s *Scheduler) handBack(sl store.ShardLeases) {
	var out []store.Lease
	for i := range s.shards.held() {
		if l, ok := s.drop(i); ok {
			out = append(out, l)
		}
	}
	s.waitRuns()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := sl.ReleaseShards(ctx, s.o.Holder, out, true); err != nil {
		s.log.Warn().Err(err).Msg("cannot hand scheduling shards back; they expire instead")
	}
}

// waitShardRuns waits, within a quarter lease TTL, for the runs of the
// given shards to end, and says whether they all did.
func (s *Scheduler) waitShardRuns(shards []int) bool {
	limit := s.clock.After(s.o.LeaseTTL / 4)
	n := s.shards.shardCount()
	for {
		slot := s.running.find(func(id string) bool { return slices.Contains(shards, store.ShardOf(id, n)) })
		if slot == nil {
			return true
		}
		select {
		case <-slot.done:
		case <-limit:
			return false
		}
	}
}

// oneShard shares nothing: the one scheduler lease, for a store that does
// not divide scheduling (the embedded store, one process).
type oneShard struct{ l store.Leases }

var _ store.ShardLeases = oneShard{}

func (oneShard) Shards() int { return 1 }

func (o oneShard) BalanceShards(ctx context.Context, holder string, ttl time.Duration, held map[int]store.Lease) (store.ShardView, error) {
	v := store.ShardView{Shards: 1, Live: 1, Mine: map[int]store.Lease{}, Holders: []string{""}}
	if l, ok := held[0]; ok {
		nl, err := o.l.Renew(ctx, l, ttl)
		if err == nil {
			v.Mine[0], v.Holders[0] = nl, holder
			return v, nil
		}
		if !errors.Is(err, store.ErrLeaseLost) {
			return v, err
		}
	}
	l, err := o.l.Acquire(ctx, SchedulerLease, holder, ttl)
	if errors.Is(err, store.ErrLeaseHeld) {
		if cur, err := o.l.Current(ctx, SchedulerLease); err == nil {
			v.Holders[0], v.NextExpiry = cur.Holder, cur.Expires
		}
		return v, nil
	}
	if err != nil {
		return v, err
	}
	v.Mine[0], v.Holders[0] = l, holder
	return v, nil
}

func (o oneShard) ReleaseShards(ctx context.Context, _ string, leases []store.Lease, _ bool) error {
	var errs []error
	for _, l := range leases {
		errs = append(errs, o.l.Release(ctx, l))
	}
	return errors.Join(errs...)
}
