package scheduler

import (
	"context"
	"sync"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Due runs wait in a bounded queue served by a fixed pool of workers, not
// one goroutine each: however many tasks fall due at once (a start after
// a long stop, a big baseline), herald holds at most runQueueSize waiting
// runs and runWorkers running ones; the rest stay planned in the wake-up
// heap until the queue has room.
const (
	runQueueSize = 1024
	// runWorkers covers the largest concurrent_runs (64): the global cap,
	// the per-host cap and the one-run-per-session rule decide how many
	// of them read sources at once.
	runWorkers = 64
)

// queued is a scheduled run waiting for a worker.
type queued struct {
	id   string
	due  Due
	ctx  context.Context
	slot *runSlot
}

// runPool is the queue and its workers for one period of ownership.
type runPool struct {
	q  chan queued
	wg sync.WaitGroup
}

// startPool starts the workers; they stop when ctx ends. A run whose own
// context ended while it waited (a stop, or its task is no longer this
// replica's) is dropped unrun: its check stays owed (I4).
func (s *Scheduler) startPool(ctx context.Context) *runPool {
	p := &runPool{q: make(chan queued, runQueueSize)}
	for range runWorkers {
		p.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					p.drain(s)
					return
				case j := <-p.q:
					if j.ctx.Err() != nil { // stopped, or its task is no longer this replica's
						s.dropRun(j)
						continue
					}
					s.runQueued(j)
				}
			}
		})
	}
	return p
}

// room is how many more runs the queue takes now.
func (p *runPool) room() int { return cap(p.q) - len(p.q) }

// drain drops every run still waiting.
func (p *runPool) drain(s *Scheduler) {
	for {
		select {
		case j := <-p.q:
			s.dropRun(j)
		default:
			return
		}
	}
}

// enqueue queues a scheduled run of task id unless one is already going
// or waiting (one run at a time per task); it reports false when the
// queue is full.
func (s *Scheduler) enqueue(ctx context.Context, p *runPool, id string, due Due) bool {
	// ctx is the context runs of the task start under (runContext).
	slot, _ := s.running.claim(id, func() *runSlot {
		slot, rctx := newRunSlot(ctx)
		select {
		case p.q <- queued{id: id, due: due, ctx: rctx, slot: slot}:
			return slot
		default:
			slot.cancel(nil)
			return nil
		}
	})
	return slot != nil
}

func (s *Scheduler) runQueued(j queued) {
	defer j.slot.cancel(nil)
	j.slot.rec = s.o.Runner.Run(j.ctx, s.job(j.id, j.due, true))
	s.endRun(j.id, j.slot)
}

// dropRun ends a waiting run that never started: nothing is written, so
// the task's check stays owed and is planned again at the next start or
// takeover (I4).
func (s *Scheduler) dropRun(j queued) {
	j.slot.rec = tasks.RunRecord{TaskID: j.id, Outcome: tasks.OutcomeCancelled, Class: watch.Cancelled}
	j.slot.cancel(nil)
	s.endRun(j.id, j.slot)
}

func (s *Scheduler) endRun(id string, slot *runSlot) {
	s.running.remove(id)
	close(slot.done)
	s.Touch(id) // re-plan; also tells the loop the queue has room
}
