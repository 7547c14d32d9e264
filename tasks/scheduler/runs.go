package scheduler

import (
	"context"
	"strings"
	"sync"

	"github.com/herald-bridge/herald/tasks"
)

// runSlot is one run going or waiting in the queue.
type runSlot struct {
	done   chan struct{}
	rec    tasks.RunRecord
	cancel context.CancelCauseFunc
}

// newRunSlot is a new run's slot and the context the run goes under.
func newRunSlot(ctx context.Context) (*runSlot, context.Context) {
	rctx, cancel := context.WithCancelCause(ctx)
	return &runSlot{done: make(chan struct{}), cancel: cancel}, rctx
}

// runTable is the runs going or queued, one per task, and the one-place
// semaphores of the source sessions (I7).
type runTable struct {
	mu       sync.Mutex
	running  map[string]*runSlot
	sessions map[string]chan struct{}
}

func newRunTable() *runTable {
	return &runTable{running: map[string]*runSlot{}, sessions: map[string]chan struct{}{}}
}

func (t *runTable) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.running[id]
	return ok
}

// claim returns task id's run when one is going (started false); else it
// records the slot start makes, if any, as id's run (started true).
func (t *runTable) claim(id string, start func() *runSlot) (s *runSlot, started bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.running[id]; ok {
		return s, false
	}
	s = start()
	if s != nil {
		t.running[id] = s
	}
	return s, true
}

func (t *runTable) remove(id string) {
	t.mu.Lock()
	delete(t.running, id)
	t.mu.Unlock()
}

// count is how many runs are going or waiting in the queue.
func (t *runTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.running)
}

// find returns a run whose task id satisfies match, nil when none does.
func (t *runTable) find(match func(id string) bool) *runSlot {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, s := range t.running {
		if match(id) {
			return s
		}
	}
	return nil
}

// cancel cancels the run of the task id names, and reports whether one
// was going.
func (t *runTable) cancel(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, cand := range tasks.CandidateIDs(strings.TrimSpace(id)) {
		if s, ok := t.running[cand]; ok {
			s.cancel(ErrRunCancelled)
			return true
		}
	}
	return false
}

// session returns the one-slot semaphore of a source session.
func (t *runTable) session(key string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	sem, ok := t.sessions[key]
	if !ok {
		sem = make(chan struct{}, 1)
		t.sessions[key] = sem
	}
	return sem
}

// startRun starts a run of task id unless one is already going, and
// returns its slot. One run at a time per task. A scheduled run (from the
// loop's plan) happens only while the task is still active; a requested
// one (RunNow) was checked by its caller.
func (s *Scheduler) startRun(ctx context.Context, id string, due Due, scheduled bool) *runSlot {
	var rctx context.Context
	slot, started := s.running.claim(id, func() *runSlot {
		var r *runSlot
		r, rctx = newRunSlot(ctx)
		return r
	})
	if !started {
		return slot
	}
	go func() {
		defer slot.cancel(nil)
		slot.rec = s.o.Runner.Run(rctx, s.job(id, due, scheduled))
		s.endRun(id, slot)
	}()
	return slot
}

// waitRuns waits until no run is going.
func (s *Scheduler) waitRuns() {
	for {
		r := s.running.find(func(string) bool { return true })
		if r == nil {
			return
		}
		<-r.done
	}
}
