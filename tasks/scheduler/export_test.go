package scheduler

import (
	"context"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// What the assembly tests (package scheduler_test, which wires a real
// runner) reach of the scheduler's inside.

const (
	RunWorkers   = runWorkers
	RunQueueSize = runQueueSize
)

// Gain makes s own shard i under l without its balancing loop.
func (s *Scheduler) Gain(ctx context.Context, i int, l store.Lease) { s.shards.gain(ctx, i, l) }

// Drop stops owning shard i.
func (s *Scheduler) Drop(i int) { s.drop(i) }

// Mine reports whether s schedules task id now.
func (s *Scheduler) Mine(id string) bool { return s.mine(id) }

// Held is the leases s holds, by shard.
func (s *Scheduler) Held() map[int]store.Lease { return s.shards.held() }

// Recover runs the recovery of interrupted pushes.
func (s *Scheduler) Recover(ctx context.Context) error { return s.recover(ctx) }

// RunSlot is a run going, as StartRun returns it.
type RunSlot struct{ s *runSlot }

// Done is closed when the run ended.
func (r RunSlot) Done() <-chan struct{} { return r.s.done }

// Rec is the run's record, once Done.
func (r RunSlot) Rec() tasks.RunRecord { return r.s.rec }

// StartRun starts a run of task id unless one is going.
func (s *Scheduler) StartRun(ctx context.Context, id string, due Due, scheduled bool) RunSlot {
	return RunSlot{s.startRun(ctx, id, due, scheduled)}
}

// RunTask runs task id once, now, outside the run table.
func (s *Scheduler) RunTask(ctx context.Context, id string, due Due, scheduled bool) tasks.RunRecord {
	return s.o.Runner.Run(ctx, s.job(id, due, scheduled))
}

// WaitRuns waits until no run is going.
func (s *Scheduler) WaitRuns() { s.waitRuns() }

// RunningCount is how many runs are going or queued.
func (s *Scheduler) RunningCount() int { return s.running.count() }

// SetSlots replaces the global cap by one of size n.
func (s *Scheduler) SetSlots(n int) { s.runs = newSlots(n) }

// SlotsInUse is how many slots of the global cap are taken.
func (s *Scheduler) SlotsInUse() int { return s.runs.inUse() }

// EnterHost waits for a place among rawURL's host's checks.
func (s *Scheduler) EnterHost(ctx context.Context, rawURL string, l tasks.Limits) (func(), error) {
	return s.hosts.enter(ctx, rawURL, l)
}

// SetStore replaces the store the scheduler reads snapshots from.
func (s *Scheduler) SetStore(st store.Store) { s.store = st }

// Planner is a wake-up heap.
type Planner struct{ p *planner }

// NewPlanner returns an empty heap sized for n tasks.
func NewPlanner(n int) Planner { return Planner{&planner{gen: make(map[string]uint64, n)}} }

func (p Planner) Plan(task string, check, remind time.Time) { p.p.plan(task, check, remind) }

// Due is how many wake-ups are due at now, at most limit, popped.
func (p Planner) Due(now time.Time, limit int) int { return len(p.p.due(now, limit)) }

// Next is the next wake-up.
func (p Planner) Next() (time.Time, bool) { return p.p.next() }

// PlanTask plans t into p.
func (s *Scheduler) PlanTask(ctx context.Context, p Planner, t *tasks.Task) { s.planTask(ctx, p.p, t) }
