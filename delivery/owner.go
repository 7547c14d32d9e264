package delivery

import (
	"context"
	"time"

	"github.com/herald-bridge/herald/store"
)

// notMineFor is how long a replica passes over a push it left to the
// replica that owns its task before it looks at it again: ownership moves
// (a replica starts or stops), and the new owner finds it within this.
const notMineFor = 5 * time.Second

// ownerOnly leaves a push whose route only the owner of its task may
// deliver (Route.OwnerOnly: a course download, written under the data dir
// of the replica that schedules the task) to that owner. A replica that
// does not schedule the task does nothing with it: no attempt, no hold, no
// wait recorded, so the owner takes it as it was queued. It is passed over
// for notMineFor, so a queue that keeps it does not keep this dispatcher
// reading the queue in a loop.
func ownerOnly(_ context.Context, d *Dispatcher, b *batch) []*batch {
	if !b.route.OwnerOnly || d.o.Owns == nil || d.o.Owns(b.taskID()) {
		return pass(b)
	}
	d.leave(b.fx, b.now.Add(notMineFor))
	return nil
}

// leave passes fxs over in take until until.
func (d *Dispatcher) leave(fxs []store.Effect, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, fx := range fxs {
		d.notMine[fx.Key] = until
	}
}

// forgetNotMine looks again at the pushes passed over until now (mu held).
func (d *Dispatcher) forgetNotMine(now time.Time) {
	for k, until := range d.notMine {
		if !now.Before(until) {
			delete(d.notMine, k)
		}
	}
}
