package store

import "time"

// Claimed is e as Ledger.Commit stores it when c claims it at now: under
// c's task unless it names its own, pending, due now unless it names when,
// with its creation and update times set, and, for a commit handed to a
// worker (RunCommit.Worker), already in flight with its first attempt
// begun. It is the first transition of the ledger's state machine
// (Progress); the others follow from there.
func Claimed(e Effect, c RunCommit, now time.Time) Effect {
	if e.TaskID == "" {
		e.TaskID = c.TaskID
	}
	e.State, e.InFlight, e.Worker = Pending, false, ""
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.NotBefore.IsZero() {
		e.NotBefore = now
	}
	e.UpdatedAt = now
	if c.Worker != "" {
		e.InFlight, e.Worker = true, c.Worker
		e.Attempts = []Attempt{{N: 1, Start: now, By: c.Worker, Outcome: Pending}}
	}
	return e
}

// Ended reports whether s is a final outcome (completed, failed or
// unknown): nothing more is attempted unless someone asks for a
// redelivery.
func (s EffectState) Ended() bool { return s == Completed || s == Failed || s == Unknown }
