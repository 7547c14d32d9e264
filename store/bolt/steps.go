package bolt

import (
	"fmt"
	"time"

	"github.com/herald-bridge/herald/store"
)

// step is one ledger transition on an effect's state: it checks st and
// changes it, or refuses before changing anything. The same steps run on
// the file (transition) and on logged effects (overlay.go); the queue and
// in-flight entries follow the state (reindex).
type step func(st *effectState) error

func illegal(st *effectState, op string) error {
	return fmt.Errorf("%s from %s (in flight %t): %w", op, st.State, st.InFlight, store.ErrIllegalTransition)
}

// queuedOnly refuses unless the effect waits in the queue.
func queuedOnly(st *effectState, op string) error {
	if st.State != store.Pending || st.InFlight {
		return illegal(st, op)
	}
	return nil
}

func beginStep(worker string, seen int, now time.Time) step {
	return func(st *effectState) error {
		if err := queuedOnly(st, "begin"); err != nil {
			return err
		}
		if len(st.Attempts) != seen {
			return fmt.Errorf("begin after %d attempts, read with %d: %w", len(st.Attempts), seen, store.ErrIllegalTransition)
		}
		st.InFlight, st.Worker, st.UpdatedAt = true, worker, now
		st.Attempts = append(st.Attempts, store.Attempt{
			N: len(st.Attempts) + 1, Start: now, Part: st.PartsSent, By: worker, Outcome: store.Pending,
		})
		return nil
	}
}

func settleStep(o store.Outcome, now time.Time) step {
	return func(st *effectState) error {
		if st.State != store.Pending || !st.InFlight {
			return illegal(st, "settle")
		}
		switch o.State {
		case store.Pending, store.Completed, store.Failed, store.Unknown:
		default:
			return fmt.Errorf("settle to %q: %w", o.State, store.ErrIllegalTransition)
		}
		endAttempt(st, o.State, o.Error, now)
		if o.ProviderID != "" {
			st.ProviderID = o.ProviderID
		}
		st.PartsSent = max(st.PartsSent, o.PartsSent)
		if o.State == store.Pending {
			st.NotBefore = o.RetryAt
			if st.NotBefore.IsZero() {
				st.NotBefore = now
			}
		}
		return nil
	}
}

// endAttempt records the in-flight attempt's outcome and takes the
// effect out of flight in state.
func endAttempt(st *effectState, state store.EffectState, reason string, now time.Time) {
	if n := len(st.Attempts); n > 0 {
		a := &st.Attempts[n-1]
		a.End, a.Outcome, a.Error = now, state, reason
	}
	st.State, st.InFlight, st.Worker, st.UpdatedAt, st.Error = state, false, "", now, reason
}

func deferStep(until time.Time, reason string, now time.Time) step {
	return func(st *effectState) error {
		if err := queuedOnly(st, "defer"); err != nil {
			return err
		}
		if until.IsZero() {
			until = now
		}
		st.NotBefore, st.UpdatedAt = until, now
		if reason != "" {
			st.Error = reason
		}
		return nil
	}
}

func expireStep(reason string, now time.Time) step {
	return func(st *effectState) error {
		if err := queuedOnly(st, "expire"); err != nil {
			return err
		}
		st.State, st.Error, st.UpdatedAt = store.Failed, reason, now
		return nil
	}
}

// redeliverStep queues an ended effect again, due now. The attempt
// history gains an entry by who. ExpiresAt is cleared: a human replay is
// not bound by the original deadline.
func redeliverStep(who string, now time.Time) step {
	return func(st *effectState) error {
		if st.State == store.Pending || st.InFlight {
			return illegal(st, "redeliver")
		}
		st.Attempts = append(st.Attempts, store.Attempt{
			N: len(st.Attempts) + 1, Start: now, End: now, Part: st.PartsSent, By: who,
			Outcome: store.Pending, Error: store.RedeliveryMark,
		})
		st.State, st.Error, st.NotBefore, st.ExpiresAt, st.UpdatedAt = store.Pending, "", now, time.Time{}, now
		return nil
	}
}

// recoverStep ends a dead worker's attempt as decided; the effect is
// queued again at notBefore when the decision is Pending.
func recoverStep(worker string, state store.EffectState, reason string, notBefore, now time.Time) step {
	return func(st *effectState) error {
		if st.State != store.Pending || !st.InFlight || st.Worker != worker {
			return illegal(st, "recover") // settled, or a new attempt began, since the scan
		}
		endAttempt(st, state, reason, now)
		if state == store.Pending {
			st.NotBefore = notBefore
		}
		return nil
	}
}
