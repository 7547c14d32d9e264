package store

import (
	"fmt"
	"slices"
	"time"
)

// Progress is the part of an effect its transitions change: where it
// stands (pending and queued, in flight, or ended), its attempts and when
// it is due. The ledger's rules are the methods below, each a pure
// function from one Progress to the next that refuses with
// ErrIllegalTransition before changing anything. Every backend runs these
// same functions inside its own atomicity (a bbolt transaction, a Redis
// compare-and-swap) and keeps its indexes (queue, in-flight set) in step
// with Queued and Flying; no backend decides a transition itself.
//
// The methods never write into p's Attempts: a new state has its own copy,
// so a state read before stays as it was.
type Progress struct {
	State      EffectState
	InFlight   bool
	Worker     string
	Attempts   []Attempt
	NotBefore  time.Time
	ExpiresAt  time.Time
	UpdatedAt  time.Time
	Error      string
	ProviderID string
	PartsSent  int
	// Holds counts the times the effect was held in the queue (Hold)
	// without an attempt; with the attempts it makes up Version.
	Holds int
}

// Progress is e's changing part.
func (e *Effect) Progress() Progress {
	return Progress{
		State: e.State, InFlight: e.InFlight, Worker: e.Worker, Attempts: e.Attempts,
		NotBefore: e.NotBefore, ExpiresAt: e.ExpiresAt, UpdatedAt: e.UpdatedAt, Error: e.Error,
		ProviderID: e.ProviderID, PartsSent: e.PartsSent, Holds: e.Holds,
	}
}

// SetProgress replaces e's changing part with p.
func (e *Effect) SetProgress(p Progress) {
	e.State, e.InFlight, e.Worker, e.Attempts = p.State, p.InFlight, p.Worker, p.Attempts
	e.NotBefore, e.ExpiresAt, e.UpdatedAt, e.Error = p.NotBefore, p.ExpiresAt, p.UpdatedAt, p.Error
	e.ProviderID, e.PartsSent, e.Holds = p.ProviderID, p.PartsSent, p.Holds
}

// Version numbers the effect's stays in the queue: it grows with every
// attempt entry (Begin, Redeliver) and every hold, so no two stays share
// one. A stay ends by Begin, Hold (a new stay, due at another time) or
// Expire; Settle and Recover queue an effect again only after a Begin has
// moved the version on. A read of the queue is therefore current exactly
// while the effect's version is still the one read: Begin checks it.
// An effect that was never held has as its version its number of attempts.
func (p Progress) Version() int { return len(p.Attempts) + p.Holds }

// Version is e's Progress().Version().
func (e *Effect) Version() int { return e.Progress().Version() }

// Queued reports whether the effect waits in the queue (pending, not in flight).
func (p Progress) Queued() bool { return p.State == Pending && !p.InFlight }

// Flying reports whether an attempt of the effect is in flight.
func (p Progress) Flying() bool { return p.State == Pending && p.InFlight }

func (p Progress) illegal(op string) error {
	return fmt.Errorf("%s from %s (in flight %t): %w", op, p.State, p.InFlight, ErrIllegalTransition)
}

// queuedOnly refuses op unless the effect waits in the queue.
func (p Progress) queuedOnly(op string) error {
	if !p.Queued() {
		return p.illegal(op)
	}
	return nil
}

// Begin puts the effect in flight for worker with a new attempt for part
// PartsSent. seen is the Version the caller read: a read older than the
// effect's current stay in the queue (an attempt or a hold since) is
// refused, so a push put off to later is not sent early from a stale read.
func (p Progress) Begin(worker string, seen int, now time.Time) (Progress, error) {
	if err := p.queuedOnly("begin"); err != nil {
		return p, err
	}
	if v := p.Version(); v != seen {
		return p, fmt.Errorf("begin at version %d, read at %d: %w", v, seen, ErrIllegalTransition)
	}
	p.InFlight, p.Worker, p.UpdatedAt = true, worker, now
	p.Attempts = append(slices.Clip(p.Attempts), Attempt{
		N: len(p.Attempts) + 1, Start: now, Part: p.PartsSent, By: worker, Outcome: Pending,
	})
	return p, nil
}

// Settle records the outcome of the in-flight attempt. Pending (the
// attempt provably did not cross the boundary) queues the effect again
// at o.RetryAt (now if zero); the other outcomes are final.
func (p Progress) Settle(o Outcome, now time.Time) (Progress, error) {
	if !p.Flying() {
		return p, p.illegal("settle")
	}
	switch o.State {
	case Pending, Completed, Failed, Unknown:
	default:
		return p, fmt.Errorf("settle to %q: %w", o.State, ErrIllegalTransition)
	}
	p = p.endAttempt(o.State, o.Error, now)
	if o.ProviderID != "" {
		p.ProviderID = o.ProviderID
	}
	p.PartsSent = max(p.PartsSent, o.PartsSent)
	if o.State == Pending {
		p.NotBefore = o.RetryAt
		if p.NotBefore.IsZero() {
			p.NotBefore = now
		}
	}
	return p, nil
}

// Hold moves a queued effect's due time to until (now if zero) without an
// attempt (quiet hours, mute, an order wait, a release) and records
// reason as its Error ("" keeps the one it has). It starts a new stay in
// the queue: a Begin from a read before it is refused.
func (p Progress) Hold(until time.Time, reason string, now time.Time) (Progress, error) {
	if err := p.queuedOnly("hold"); err != nil {
		return p, err
	}
	if until.IsZero() {
		until = now
	}
	p.NotBefore, p.UpdatedAt, p.Holds = until, now, p.Holds+1
	if reason != "" {
		p.Error = reason
	}
	return p, nil
}

// Expire ends a queued effect as Failed with reason.
func (p Progress) Expire(reason string, now time.Time) (Progress, error) {
	if err := p.queuedOnly("expire"); err != nil {
		return p, err
	}
	p.State, p.Error, p.UpdatedAt = Failed, reason, now
	return p, nil
}

// Redeliver queues an ended effect again, due now: an explicit human
// replay, recorded as an attempt entry by who (RedeliveryMark). The
// original deadline is cleared: a human replay is not bound by it.
func (p Progress) Redeliver(who string, now time.Time) (Progress, error) {
	if !p.State.Ended() || p.InFlight {
		return p, p.illegal("redeliver")
	}
	p.Attempts = append(slices.Clip(p.Attempts), Attempt{
		N: len(p.Attempts) + 1, Start: now, End: now, Part: p.PartsSent, By: who,
		Outcome: Pending, Error: RedeliveryMark + " after " + string(p.State),
	})
	p.State, p.InFlight, p.Worker, p.Error = Pending, false, "", ""
	p.NotBefore, p.ExpiresAt, p.UpdatedAt = now, time.Time{}, now
	return p, nil
}

// Recover ends the in-flight attempt of worker, who is gone, as
// Recovery.Decide decided: state Pending queues the effect again at
// notBefore, Unknown ends it. Refused when the effect is no longer in
// flight for worker (settled, or begun again, since it was read).
func (p Progress) Recover(worker string, state EffectState, reason string, notBefore, now time.Time) (Progress, error) {
	if !p.Flying() || p.Worker != worker {
		return p, p.illegal("recover")
	}
	switch state {
	case Pending, Unknown:
	default:
		return p, fmt.Errorf("recover to %q: %w", state, ErrIllegalTransition)
	}
	p = p.endAttempt(state, reason, now)
	if state == Pending {
		p.NotBefore = notBefore
	}
	return p, nil
}

// endAttempt records the in-flight attempt's outcome and takes the
// effect out of flight in state.
func (p Progress) endAttempt(state EffectState, reason string, now time.Time) Progress {
	if n := len(p.Attempts); n > 0 {
		p.Attempts = slices.Clone(p.Attempts)
		a := &p.Attempts[n-1]
		a.End, a.Outcome, a.Error = now, state, reason
	}
	p.State, p.InFlight, p.Worker, p.UpdatedAt, p.Error = state, false, "", now, reason
	return p
}
