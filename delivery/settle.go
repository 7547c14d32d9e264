package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/herald-bridge/herald/store"
)

// partHold keeps a split message's group together between its parts.
const partHold = 30 * time.Second

// settleFor is how long an outcome is retried while the store does not
// answer; past it the attempt stays in flight and reads as unknown once
// recovered (I3) — never as "not sent".
const settleFor = 10 * time.Minute

// settle records the sink's outcome on every push of the batch,
// including those whose item the message carried folded into a later
// state (merge): they were delivered exactly when the message was. A
// message with another part to send passes the batch on, to go round
// the part's stages again; anything else ends here.
func settle(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	now, out, part, first := d.o.Now(), b.out, b.part, b.fx[0]
	switch out.Result {
	case Completed:
		if out.Parts > part+1 { // more parts: each its own recorded attempt
			d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
				// This worker sends the next part at once; RetryAt only
				// matters if it dies first, and keeps other replicas from
				// taking the group apart in between.
				return store.Outcome{State: store.Pending, RetryAt: now.Add(partHold), PartsSent: part + 1, ProviderID: out.ProviderID}
			})
			// The next part may win fewer: it is begun and merged again.
			b.claimed, b.msg, b.again = false, nil, true
			return pass(b)
		}
		d.settleAll(ctx, b.fx, func(fx store.Effect) store.Outcome {
			d.o.Metrics.Latency.Observe(now.Sub(fx.CreatedAt).Seconds())
			return store.Outcome{State: store.Completed, ProviderID: out.ProviderID, PartsSent: max(out.Parts, 1)}
		})
	case RetryAfter: // provably not sent: queue again, never block a worker
		at := now.Add(max(out.After, time.Second, unreachableWait(out.Reason, partAttempts(first, part))))
		d.settleAll(ctx, b.fx, func(fx store.Effect) store.Outcome {
			// A retry is never scheduled past the effect's expiry: it
			// comes back at ExpiresAt and ends there, unsent.
			return store.Outcome{State: store.Pending, RetryAt: notAfter(at, fx.ExpiresAt), Error: out.Reason, PartsSent: part}
		})
	case Failed:
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			return store.Outcome{State: store.Failed, Error: out.Reason, PartsSent: part}
		})
		// A recipient that is gone was disabled (standing), and its
		// owner told so once; anything else unreachable is told here.
		if out.Unreachable && !(out.Gone && d.o.Recipients != nil) && d.o.Hooks.Unreachable != nil {
			d.o.Hooks.Unreachable(ctx, b.taskID(), b.recipient(), out.Reason)
		}
	default: // Unknown: replay only where the provider dedups by the key (I3)
		// The group is replayed whole or not at all, so the replay
		// carries the same delivery key and the provider can drop it.
		tries := partAttempts(first, part)
		at := now.Add(backoff(tries))
		// A recipient with a retry schedule had its retries there (retry).
		replay := b.route.Dedups && len(b.route.Retry.Schedule) == 0 && tries < d.o.MaxIdempotentAttempts
		for _, fx := range b.fx {
			// A replay must fit before expiry: an expired effect ends
			// failed, which would misreport an attempt that may have
			// arrived.
			replay = replay && (fx.ExpiresAt.IsZero() || at.Before(fx.ExpiresAt))
		}
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			if replay {
				return store.Outcome{State: store.Pending, RetryAt: at, Error: out.Reason, PartsSent: part}
			}
			return store.Outcome{State: store.Unknown, Error: out.Reason, PartsSent: part}
		})
	}
	return nil
}

// settleAll records each effect's outcome, concurrently so the store can
// commit them together.
func (d *Dispatcher) settleAll(ctx context.Context, fxs []store.Effect, outcome func(store.Effect) store.Outcome) {
	d.each(len(fxs), func(i int) { d.settleKey(ctx, fxs[i].Key, outcome(fxs[i])) })
}

// settleKey records one effect's outcome, waiting out a store that does
// not answer for up to settleFor.
func (d *Dispatcher) settleKey(ctx context.Context, key string, o store.Outcome) {
	wait := 100 * time.Millisecond
	deadline := time.Now().Add(settleFor)
	for logged := false; ; {
		_, err := d.o.Ledger.Settle(ctx, key, o, d.o.Now())
		if err == nil {
			return
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			d.o.Log.Error().Err(err).Str("effect", key).Msg("cannot record a delivery outcome; it will read as unknown after recovery")
			return
		}
		if !logged {
			d.o.Log.Warn().Err(err).Str("effect", key).Msg("store unavailable; keeping the outcome until it answers")
			logged = true
		}
		select {
		case <-time.After(wait):
		case <-d.stopping(): // shutting down: the attempt stays in flight and recovers as unknown
			d.o.Log.Error().Err(err).Str("effect", key).Msg("cannot record a delivery outcome before shutdown; it will read as unknown after recovery")
			return
		}
		wait = min(wait*2, 5*time.Second)
	}
}

// maxUnreachableWait bounds the wait between attempts at a recipient
// that cannot be reached.
const maxUnreachableWait = 10 * time.Minute

// unreachableWait is how long a push waits after its attempts-th
// attempt in a row at a recipient whose name did not resolve or whose
// host refused the connection: NotSentWait, doubling with each attempt
// after the first, at most maxUnreachableWait — a recipient that is down
// is tried less and less often, not every few seconds. Other reasons
// wait as the sink asked.
func unreachableWait(reason string, attempts int) time.Duration {
	if reason != ReasonDNS && reason != ReasonConnectFailed {
		return 0
	}
	d := NotSentWait
	for range max(attempts-1, 0) {
		if d *= 2; d >= maxUnreachableWait {
			return maxUnreachableWait
		}
	}
	return d
}

// backoff is how long an unknown attempt waits before its replay.
func backoff(attempts int) time.Duration {
	d := time.Second << max(attempts-1, 0)
	return min(d, time.Minute)
}
