package delivery

import (
	"context"

	"github.com/herald-bridge/herald/store"
)

// begin records a new attempt on each push of the batch, concurrently so
// the store can commit them together, and passes on the ones this worker
// won, in group order (the first one's key is the message's delivery
// key). Pushes claimed already (handed over in flight) go on as they are.
func begin(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if b.claimed {
		return pass(b)
	}
	b.planned = nil
	if !b.again {
		b.planned = b.fx
	}
	won := make([]store.Effect, len(b.fx))
	ok := make([]bool, len(b.fx))
	now := d.o.Now()
	d.each(len(b.fx), func(i int) {
		fx, err := d.o.Ledger.Begin(ctx, b.fx[i].Key, d.o.Worker, b.fx[i].Version(), now)
		if err != nil {
			return // taken by another worker or replica, no longer pending, or attempted since it was read
		}
		won[i], ok[i] = fx, true
	})
	out := won[:0]
	for i, fx := range won {
		if ok[i] {
			out = append(out, fx)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sortGroup(out)
	b.fx, b.claimed = out, true
	return pass(b)
}
