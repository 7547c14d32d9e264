package delivery

import (
	"context"
	"errors"

	"github.com/herald-bridge/herald/store"
)

// resolve finds the recipient's route. Pushes to a recipient that no
// longer resolves end: queued ones expire as recipient_unknown, and ones
// claimed in flight when they were handed over fail so. A transport
// switched off is left to transportOff.
func resolve(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	route, err := d.o.Router.Resolve(b.recipient())
	switch {
	case err == nil:
		b.route = route
		return pass(b)
	case b.claimed:
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			return store.Outcome{State: store.Failed, Error: "recipient_unknown"}
		})
		return nil
	case errors.Is(err, ErrTransportOff):
		b.off = err
		return pass(b)
	}
	d.each(len(b.fx), func(i int) { d.expire(ctx, b.fx[i].Key, "recipient_unknown", b.now) })
	log := b.log(d)
	log.Warn().Err(err).Msg("dropping pushes for a recipient that no longer exists")
	return nil
}
