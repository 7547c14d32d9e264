package scheduler

import (
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Run schedules while ctx lives: it keeps this replica's share of the
// scheduling shards (waiting while other replicas hold them all), recovers
// interrupted work as it gains a shard (I3, I4), and sleeps until the next
// wake-up — no polling tick. It hands its shards back before it returns.
func (s *Scheduler) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); s.balance(ctx, s.shardLeases()) }()
	s.loop(ctx)
	<-done
	return nil
}

// recover ends interrupted attempts (I3): those never sent and those a
// deduplicating recipient may receive again are queued again; the rest
// become unknown, recorded in each task's run history.
func (s *Scheduler) recover(ctx context.Context) error {
	fxs, err := s.store.Ledger().Recover(ctx, store.Recovery{Alive: s.o.Alive, Replay: s.o.Replay}, s.clock.Now())
	if err != nil {
		return fmt.Errorf("recover ledger: %w", err)
	}
	per := map[string]int{}
	queued := 0
	for _, fx := range fxs {
		if fx.State == store.Unknown {
			per[fx.TaskID]++
		} else {
			queued++
		}
	}
	if queued > 0 {
		s.log.Info().Int("effects", queued).Msg("interrupted pushes queued again: not sent yet, or sent to a recipient that drops repeats")
		s.o.WakeDelivery()
	}
	now := s.clock.Now()
	for task, n := range per {
		rec := tasks.RunRecord{ID: "run-" + tasks.RandomID(4), TaskID: task, Start: now, Outcome: tasks.OutcomeInterrupted,
			Effects: n, Reason: fmt.Sprintf("%d push(es) were in flight when herald stopped; they are marked unknown and not sent again automatically", n)}
		s.cat.RecordRun(ctx, rec)
		s.log.Warn().Str("task", task).Int("effects", n).Msg("interrupted pushes marked unknown")
	}
	return nil
}

// ---------------------------------------------------------------- wake heap

type wakeup struct {
	at   time.Time
	task string
	host string // the host a check reads, for its holds ("" unknown)
	due  Due
	gen  uint64
}

type wakeHeap []wakeup

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeup)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// planner keeps one generation per task: entries of older generations are
// stale and skipped when popped (lazy deletion).
type planner struct {
	h   wakeHeap
	gen map[string]uint64
}

func (p *planner) plan(task string, check, remind time.Time) { p.planHost(task, "", check, remind) }

// planHost plans task's wake-ups, its checks reading host.
func (p *planner) planHost(task, host string, check, remind time.Time) {
	p.gen[task]++
	g := p.gen[task]
	if !check.IsZero() {
		heap.Push(&p.h, wakeup{at: check, task: task, host: host, due: Check, gen: g})
	}
	if !remind.IsZero() && (check.IsZero() || remind.Before(check)) {
		heap.Push(&p.h, wakeup{at: remind, task: task, host: host, due: Remind, gen: g})
	}
}

func (p *planner) drop(task string) { p.gen[task]++ }

// due pops the live entries due at now, at most limit.
func (p *planner) due(now time.Time, limit int) []wakeup {
	var out []wakeup
	for p.h.Len() > 0 && len(out) < limit {
		w := p.h[0]
		if w.gen != p.gen[w.task] {
			heap.Pop(&p.h)
			continue
		}
		if w.at.After(now) {
			break
		}
		heap.Pop(&p.h)
		p.gen[w.task]++ // the task is re-planned after its run
		out = append(out, w)
	}
	return out
}

func (p *planner) next() (time.Time, bool) {
	for p.h.Len() > 0 {
		w := p.h[0]
		if w.gen != p.gen[w.task] {
			heap.Pop(&p.h)
			continue
		}
		return w.at, true
	}
	return time.Time{}, false
}

func (s *Scheduler) loop(ctx context.Context) {
	pool := s.startPool(ctx)
	defer func() {
		pool.wg.Wait()
		// Confirmations begun go out with what they have; tasks still
		// owed their baseline are expected again at the next start.
		s.sendWatching(ctx, s.watching.flush())
	}()
	p := &planner{gen: map[string]uint64{}}
	s.planAll(ctx, p)
	for {
		if s.shards.replanDue() {
			s.planAll(ctx, p)
		}
		for id := range s.dirty.take() {
			if s.running.has(id) {
				continue // re-planned when the run ends
			}
			t, err := s.cat.Get(ctx, id)
			if err != nil {
				p.drop(id)
				continue
			}
			s.planTask(ctx, p, t)
		}
		now := s.clock.Now()
		held := false
		for _, w := range p.due(now, pool.room()) {
			rctx := s.runContext(w.task)
			if rctx == nil {
				continue // no longer this replica's
			}
			if _, ok := s.hosts.heldUntil(w.host, now); ok && w.due == Check {
				// Its host asked to be left alone since this was
				// planned: plan it again, after the hold (SPEC §18).
				s.dirty.add(w.task)
				held = true
				continue
			}
			if !s.enqueue(rctx, pool, w.task, w.due) {
				// No room after all: still due.
				if w.due == Remind {
					p.planHost(w.task, w.host, time.Time{}, w.at)
				} else {
					p.planHost(w.task, w.host, w.at, time.Time{})
				}
			}
		}
		if held {
			s.poke()
		}
		// One timer for the next wake-up. While the queue is full the
		// next wake-up may already be due: then the end of a run (which
		// touches its task) is what wakes the loop.
		var timer <-chan time.Time
		if at, ok := p.next(); ok && (at.After(now) || pool.room() > 0) {
			timer = s.clock.After(at.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer:
		}
	}
}

// planAll plans every task this replica owns and drops the rest. The
// changes signalled before it are in what it reads: they are forgotten
// first, so that a start after many changes (a file of new tasks) reads
// the catalog once, not once more per task.
func (s *Scheduler) planAll(ctx context.Context, p *planner) {
	s.dirty.take()
	all, err := s.cat.All(ctx)
	if err != nil {
		s.log.Error().Err(err).Msg("cannot read the task catalog")
	}
	var firsts []*tasks.Task
	spread := s.startSpread(all)
	for _, t := range all {
		if !s.running.has(t.ID) {
			s.planTaskSpread(ctx, p, t, spread)
		}
		if t.State == tasks.Active && t.LastRunEnd.IsZero() && s.mine(t.ID) {
			firsts = append(firsts, t)
		}
	}
	s.watching.expect(firsts)
}

// planTask computes a task's next check and reminder wake-ups. An overdue
// check (herald was down) is planned once, now (I4).
func (s *Scheduler) planTask(ctx context.Context, p *planner, t *tasks.Task) {
	s.planTaskSpread(ctx, p, t, 0)
}

// planTaskSpread is planTask with an overdue check planned once within
// the first spread of now rather than at now: at a start or takeover the
// checks owed are spread out, each task at its own fixed offset.
func (s *Scheduler) planTaskSpread(ctx context.Context, p *planner, t *tasks.Task, spread time.Duration) {
	if t.State != tasks.Active || !s.mine(t.ID) {
		p.drop(t.ID)
		s.baselineDone(ctx, t, false, 0) // paused or gone before its first run
		return
	}
	now := s.clock.Now()
	check := t.NextRun
	if check.IsZero() {
		sched, err := schedule.Parse(t.Schedule, s.o.Zone)
		if err != nil {
			p.drop(t.ID)
			return
		}
		after := t.LastRunEnd
		if after.IsZero() {
			after = now
		}
		next, err := sched.Next(after)
		if err != nil {
			p.drop(t.ID)
			return
		}
		check = next
	}
	if !check.After(now) {
		check = now.Add(spreadOffset(t.ID, spread))
	}
	host := s.hosts.name(hostOf(t.Source.URL))
	if until, ok := s.hosts.heldUntil(host, now); ok && check.Before(until) {
		check = until // the host asked to be left alone until then (SPEC §18)
	}
	var remind time.Time
	switch {
	case len(t.RemindBefore) == 0:
	case t.NextRemind != nil: // known without reading the snapshot
		remind = *t.NextRemind
	default:
		if b, err := s.store.Snapshots().Get(ctx, t.ID); err == nil {
			if snap, err := watch.DecodeSnapshot(b); err == nil && snap != nil {
				if at, ok := watch.NextWake(snap, now, t.DiffOptions(s.cat.Policy().Limits)); ok {
					remind = at
				}
			}
		}
	}
	p.planHost(t.ID, host, check, remind)
}

// startStep is how far apart the checks owed at a start are spread, on
// average, until Options.StartSpread is filled.
const startStep = time.Second

// startSpread is how widely the checks owed now among all are spread
// (SPEC §18): a second per check after the first, at most
// Options.StartSpread, so one owed check runs at once and ten thousand
// are spread over the first minutes.
func (s *Scheduler) startSpread(all []*tasks.Task) time.Duration {
	now := s.clock.Now()
	owed := 0
	for _, t := range all {
		if t.State == tasks.Active && !t.NextRun.After(now) && s.mine(t.ID) {
			owed++
		}
	}
	return min(s.o.StartSpread, time.Duration(max(owed-1, 0))*startStep)
}

// spreadOffset is task id's fixed place within a spread: the same on
// every start, so a task is not always first or always last by chance.
func spreadOffset(id string, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(spread))
}
