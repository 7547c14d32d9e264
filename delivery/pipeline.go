package delivery

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
)

// stages is what a group of pushes goes through, in order, from the
// queue to the recipient. Each stage is one policy in a file of its own.
// A new policy is a new stage: one file, one line here.
var stages = pipeline{
	resolve,      // resolve.go: the recipient's route; pushes to one that is gone end
	skipDisabled, // disable.go: pushes to a disabled recipient end unsent
	unclaimed( // checked by Reserve already for pushes handed over in flight
		ownerOnly,    // owner.go: another replica's downloads are left to it, untouched
		digest,       // digest.go: a recipient's notices wait for its digest, and go in it
		transportOff, // transportoff.go: wait while the recipient's transport is off
		expiry,       // expiry.go: pushes past their expiry end unsent
		hold,         // hold.go: quiet hours and mutes hold the rest
		order,        // order.go: a task's earlier pushes go first, or along
		splitByType,  // split.go: one message type per webhook body
	),
	perPart( // once for each part of a message the sink splits
		begin,          // begin.go: a new attempt on each push; on with the ones won
		claimedInOrder, // order.go: none after a push another replica claimed
		compose,        // merge.go: one message of the group's payloads
		annotate,       // annotate.go: the model's summary or translation, if asked and in time
		record,         // sending.go: the sending record, before anything leaves
		transmit,       // send.go: the sink sends and classifies
		standing,       // disable.go: the recipient's record; gone, or failing too long, disables it
		retry,          // retry.go: the recipient's retry schedule
		settle,         // settle.go: the outcome recorded; another part goes round again
	),
}

// A stage does one policy's part for a batch and returns the batches
// the next stage gets: b itself (pass), b split in several, or none when
// the batch's way ends here (held, expired, settled).
type stage func(ctx context.Context, d *Dispatcher, b *batch) []*batch

// batch is one group of pushes on its way through the stages: sent as
// one message, to one recipient.
type batch struct {
	fx  []store.Effect // the pushes; once claimed, the earliest first
	now time.Time      // when the group was taken up: expiry, holds and order are judged as of then

	route    Route
	off      error          // resolve: the recipient's transport is switched off (transportOff)
	urgent   time.Time      // expiry: the earliest due time of its deadline reminders
	claimed  bool           // fx are in flight for this worker (begin, or Reserve and Handoff)
	planned  []store.Effect // begin: what it set out to claim, on a message's first part (claimedInOrder)
	msg      *Message       // what fx's payloads encode (compose, or Handoff)
	answered func()         // called once the recipient answered the first send (Handoff)
	again    bool           // a later part of the message than the first this delivery sends (settle)
	machine  *MachineText   // annotate: the model's text, on every part this delivery sends

	// transmit: the attempt, and the sink's report on it.
	part, attempt int
	out           Outcome
}

func (b *batch) recipient() string { return b.fx[0].Recipient }
func (b *batch) taskID() string    { return b.fx[0].TaskID }

// log is the dispatcher's log for the batch's task.
func (b *batch) log(d *Dispatcher) zerolog.Logger {
	return d.o.Log.With().Str("task", b.taskID()).Logger()
}

// pass hands b on to the next stage.
func pass(b *batch) []*batch { return []*batch{b} }

// pipeline runs stages in order; each gets every batch the one before
// it passed on.
type pipeline []stage

func (p pipeline) exec(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	bs := pass(b)
	for _, s := range p {
		var next []*batch
		for _, b := range bs {
			next = append(next, s(ctx, d, b)...)
		}
		if bs = next; len(bs) == 0 {
			return nil
		}
	}
	return bs
}

// unclaimed runs p on batches not claimed yet; a batch claimed in flight
// when it was handed over passed these checks then (Reserve).
func unclaimed(p ...stage) stage {
	return func(ctx context.Context, d *Dispatcher, b *batch) []*batch {
		if b.claimed {
			return pass(b)
		}
		return pipeline(p).exec(ctx, d, b)
	}
}

// perPart runs p once for each part of a message: the last stage passes
// the batch on when another part is to be sent, and p runs on it again.
func perPart(p ...stage) stage {
	return func(ctx context.Context, d *Dispatcher, b *batch) []*batch {
		for bs := pass(b); len(bs) > 0; {
			var next []*batch
			for _, b := range bs {
				next = append(next, pipeline(p).exec(ctx, d, b)...)
			}
			bs = next
		}
		return nil
	}
}

// deliver sends one group as one message, part by part, recording each
// attempt before it crosses the boundary and its outcome after.
func (d *Dispatcher) deliver(ctx context.Context, g group) {
	stages.exec(ctx, d, &batch{fx: g.fx, now: d.o.Now(), claimed: g.begun, msg: g.msg, answered: g.answered})
}
