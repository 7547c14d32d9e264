package delivery

import (
	"context"
	"errors"

	"github.com/herald-bridge/herald/store"
)

// sending records that begun's current attempts are about to
// leave the process (store.Ledger.Sending): a crash before this point
// reads as "not sent" and is queued again. It reports whether to send. A
// record that cannot be written sends nothing: the attempts are settled
// as provably not sent and queued again, unless recovery already took
// them from this worker (then they are no longer this worker's to settle).
func (d *Dispatcher) sending(ctx context.Context, begun []store.Effect, part int) bool {
	refs := make([]store.AttemptRef, len(begun))
	for i, fx := range begun {
		refs[i] = store.AttemptRef{Key: fx.Key, N: store.LastAttempt(fx)}
	}
	err := d.o.Ledger.Sending(ctx, d.o.Worker, refs)
	if err == nil {
		return true
	}
	if errors.Is(err, store.ErrLeaseLost) {
		d.o.Log.Error().Err(err).Msg("this worker was recovered as stopped; not sending")
		return false
	}
	d.o.Log.Warn().Err(err).Msg("cannot record a send before it starts; sending later")
	at := d.o.Now().Add(NotSentWait)
	d.settleAll(ctx, begun, func(fx store.Effect) store.Outcome {
		return store.Outcome{State: store.Pending, RetryAt: notAfter(at, fx.ExpiresAt), Error: reasonNoRecord, PartsSent: part}
	})
	return false
}

// reasonNoRecord is recorded on an attempt given up before its send
// because its sending record could not be written.
const reasonNoRecord = "not sent: the sending record could not be written"
