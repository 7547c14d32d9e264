package delivery

import (
	"context"
	"errors"

	"github.com/herald-bridge/herald/store"
)

// record notes, durably, that the batch's current attempts are about
// to leave the process (store.Ledger.Sending): a crash before this point
// reads as "not sent" and is queued again. A record that cannot be
// written sends nothing: the attempts are settled as provably not sent
// and queued again, unless recovery already took them from this worker
// (then they are no longer this worker's to settle).
func record(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	refs := make([]store.AttemptRef, len(b.fx))
	for i, fx := range b.fx {
		refs[i] = store.AttemptRef{Key: fx.Key, N: store.LastAttempt(fx)}
	}
	err := d.o.Ledger.Sending(ctx, d.o.Worker, refs)
	if err == nil {
		return pass(b)
	}
	if errors.Is(err, store.ErrLeaseLost) {
		d.o.Log.Error().Err(err).Msg("this worker was recovered as stopped; not sending")
		return nil
	}
	d.o.Log.Warn().Err(err).Msg("cannot record a send before it starts; sending later")
	at, part := d.o.Now().Add(NotSentWait), b.fx[0].PartsSent
	d.settleAll(ctx, b.fx, func(fx store.Effect) store.Outcome {
		return store.Outcome{State: store.Pending, RetryAt: notAfter(at, fx.ExpiresAt), Error: reasonNoRecord, PartsSent: part}
	})
	return nil
}

// reasonNoRecord is recorded on an attempt given up before its send
// because its sending record could not be written.
const reasonNoRecord = "not sent: the sending record could not be written"
