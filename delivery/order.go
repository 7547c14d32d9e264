package delivery

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Order (docs/delivery.md, Order and held digests): within one task
// and recipient, a task's notices (watch.changed, watch.deadline) arrive
// in the order their events happened. Four rules keep it:
//   - take hands out at most one group per task and recipient at a time
//     in this process, the earliest due first (busy);
//   - before a group is sent, earlier pushes of the same task to the same
//     recipient that have not ended are looked up (inOrder): one never
//     attempted that is due or held joins a group never attempted either
//     (an urgent reminder takes the held news of its item along); one
//     waiting for a later time, or in flight elsewhere, makes the group
//     wait; of two where either was attempted, the later one waits —
//     except behind a hold the group is not under, which an urgent
//     reminder never waits out;
//   - the look-up comes before the claim, and another replica may read
//     the same pushes at the same moment: a group that then wins only
//     some of them sends none after one it lost (claimedInOrder), as that
//     one may be on the wire from the other replica;
//   - a group's delivery key is its earliest member's (sortGroup), so the
//     same group always goes out under the same key.
// Inbound events, task state notices and tests are independent pushes,
// sent as they come.

// orderScan bounds how many of a task's newest effects inOrder reads.
const orderScan = 512

// orderWait is how long a group waits behind an earlier push in flight
// (on another replica) before looking again.
const orderWait = time.Second

// reasonOrder is recorded on pushes waiting behind an earlier one.
const reasonOrder = "waiting for an earlier push to the same recipient"

// ordered reports whether pushes of kind keep their task's order.
func ordered(kind string) bool { return kind == KindChanged || kind == KindDeadline }

// orderKey names the task and recipient whose pushes are kept in order.
func orderKey(fx store.Effect) string { return fx.Recipient + "\x00" + fx.TaskID }

// order lets a batch of a task's notices go only in their order: it
// takes along the earlier pushes that join it (inOrder), ends the ones
// whose message ended already, and holds the batch, without an attempt,
// while an earlier push must go first.
func order(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	joined, ended, wait := d.inOrder(ctx, b.fx, b.now)
	d.endWithMessage(ctx, ended)
	if !wait.IsZero() {
		log := b.log(d)
		d.each(len(joined), func(i int) {
			fx := joined[i]
			if _, err := d.o.Ledger.Defer(ctx, fx.Key, notAfter(wait, fx.ExpiresAt), reasonOrder, b.now); err != nil {
				log.Warn().Err(err).Msg("cannot hold a push behind an earlier one")
			}
		})
		return nil
	}
	if len(joined) == 0 {
		return nil
	}
	b.fx = joined
	return pass(b)
}

// claimedInOrder keeps the order after the claim, on a message's first
// part: of a batch that won only some of the pushes it set out to claim,
// only those earlier than every one lost go on (wonInOrder).
func claimedInOrder(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if b.planned == nil {
		return pass(b)
	}
	send, back := wonInOrder(b.planned, b.fx)
	b.planned = nil
	d.giveBack(ctx, back)
	if len(send) == 0 {
		return nil
	}
	b.fx = send
	return pass(b)
}

// inOrder looks for earlier pushes of live's task to its recipient that
// have not ended. It returns live with those that join it, or, when the
// group must wait behind one, the time to look again. Only a group none
// of whose members was attempted takes others along: a group attempted
// before must carry again exactly what it carried (a replay or a
// redelivery under the same key, which a receiver may drop as a repeat),
// so it goes alone, after whatever is older than all its members.
//
// Before that, a push whose last attempt a crash interrupted goes with its
// message (withItsMessage): it ends as another push of that message
// recorded (returned in ended, to be settled so without a send), or goes
// again together with the ones still queued. On a wait, the pushes
// returned are the ones to hold.
func (d *Dispatcher) inOrder(ctx context.Context, live []store.Effect, now time.Time) (out []store.Effect, ended []ending, wait time.Time) {
	if !ordered(live[0].Kind) {
		return live, nil, time.Time{}
	}
	fxs, err := d.o.Ledger.List(ctx, live[0].TaskID, orderScan)
	if err != nil {
		d.o.Log.Warn().Err(err).Str("task", live[0].TaskID).Msg("cannot check for earlier pushes; waiting")
		return live, nil, now.Add(orderWait)
	}
	live, ended, companion := withItsMessage(live, fxs)
	if len(live) == 0 {
		return nil, ended, time.Time{}
	}
	in := make(map[string]bool, len(live))
	oldest, newest, attempted := live[0], live[0].CreatedAt, false
	for _, fx := range live {
		in[fx.Key] = true
		if fx.CreatedAt.After(newest) {
			newest = fx.CreatedAt
		}
		if earlier(fx, oldest) {
			oldest = fx
		}
		attempted = attempted || len(fx.Attempts) > 0
	}
	later := func(t time.Time) {
		if t.After(wait) {
			wait = t
		}
	}
	out = live
	for _, o := range fxs {
		if o.State != store.Pending || in[o.Key] || o.Recipient != live[0].Recipient || !ordered(o.Kind) ||
			(o.CreatedAt.After(newest) && !companion[o.Key]) || (!o.ExpiresAt.IsZero() && !now.Before(o.ExpiresAt)) {
			continue
		}
		held := o.Error == reasonHeld && o.NotBefore.After(now)
		switch {
		case o.Error == reasonDigest && o.NotBefore.After(now):
			// Held for the recipient's digest, which this group does
			// not wait for (a reminder due before it): it stays there.
		case o.InFlight:
			later(now.Add(orderWait))
		case companion[o.Key] && !o.NotBefore.After(now):
			out = append(out, o) // the rest of an interrupted message: it goes again whole
		case companion[o.Key]:
			later(o.NotBefore) // its message is to be retried then: due together, it goes whole
		case !attempted && len(o.Attempts) == 0 && (held || !o.NotBefore.After(now)):
			out = append(out, o) // never attempted: it goes in this message
		case held:
			// Held while this group is not (an urgent reminder in quiet
			// hours) and it cannot join: the reminder does not wait out
			// the hold and miss its deadline.
		case attempted || len(o.Attempts) > 0:
			// One of the two must go alone: the later one waits.
			if earlier(o, oldest) {
				later(o.NotBefore.Add(time.Millisecond))
			}
		default:
			later(o.NotBefore) // due then: waiting until then joins its group
		}
	}
	if !wait.IsZero() {
		return live, ended, wait
	}
	return out, ended, time.Time{}
}

// wonInOrder keeps a group's order when it won only some of its pushes
// (begin). Another worker claimed the others: another replica, which read
// the queue when this one did and may have one of them on the wire now.
// Sent beside it, a later push could arrive first. So only the pushes won
// that are earlier than every one lost go (send); the rest are given back
// unsent (back), and the order check looks at them again.
func wonInOrder(planned, won []store.Effect) (send, back []store.Effect) {
	if len(won) == len(planned) || len(won) == 0 || !ordered(won[0].Kind) {
		return won, nil
	}
	in := make(map[string]bool, len(won))
	for _, fx := range won {
		in[fx.Key] = true
	}
	var lost *store.Effect
	for i := range planned {
		if !in[planned[i].Key] && (lost == nil || earlier(planned[i], *lost)) {
			lost = &planned[i]
		}
	}
	for _, fx := range won {
		if earlier(fx, *lost) {
			send = append(send, fx)
		} else {
			back = append(back, fx)
		}
	}
	return send, back
}

// giveBack queues begun pushes again, due now, without a send: their
// attempt ends as provably not sent.
func (d *Dispatcher) giveBack(ctx context.Context, begun []store.Effect) {
	now := d.o.Now()
	d.settleAll(ctx, begun, func(fx store.Effect) store.Outcome {
		return store.Outcome{State: store.Pending, RetryAt: now, Error: reasonClaimedElsewhere, PartsSent: fx.PartsSent}
	})
}

// reasonClaimedElsewhere is recorded on an attempt given back before its
// send because an earlier push of its message was claimed elsewhere.
const reasonClaimedElsewhere = "not sent: an earlier push of its message was claimed by another worker"

// withItsMessage keeps a message whole across a crash. A message's
// pushes are begun together but settled one by one: a crash between two
// settles leaves some ended and the rest in flight, and recovery queues
// those again on their own. Sent alone, such a push would go under its
// own key, which the receiver has never seen, and its item would arrive
// twice. So each push of live whose last attempt was interrupted ends as
// another push of its message recorded (ended), or goes with the ones of
// that message still queued (companion).
func withItsMessage(live, fxs []store.Effect) (rest []store.Effect, ended []ending, companion map[string]bool) {
	companion = map[string]bool{}
	for _, fx := range live {
		if as, ok := messageOutcome(fx, fxs, companion); ok {
			ended = append(ended, ending{fx: fx, as: as})
		} else {
			rest = append(rest, fx)
		}
	}
	return rest, ended, companion
}

// ending is a push to be ended as its message was, without a send.
type ending struct {
	fx store.Effect
	as store.Outcome
}

// messageOutcome returns, when fx's last attempt was interrupted, the end
// another push of that message recorded for it; the pushes of that
// message still queued with it as their last attempt go in companion.
func messageOutcome(fx store.Effect, fxs []store.Effect, companion map[string]bool) (as store.Outcome, ended bool) {
	a, ok := interrupted(fx)
	if !ok {
		return as, false
	}
	for _, o := range fxs {
		b, ok := attemptWith(o, fx, a)
		switch {
		case !ok:
		case b.Outcome == store.Completed:
			as, ended = store.Outcome{State: store.Completed, Error: reasonSentWith, ProviderID: o.ProviderID, PartsSent: o.PartsSent}, true
		case b.Outcome == store.Failed || b.Outcome == store.Unknown:
			as, ended = store.Outcome{State: b.Outcome, Error: reasonEndedWith + b.Error, PartsSent: a.Part}, true
		case o.State == store.Pending && store.LastAttempt(o) == b.N:
			companion[o.Key] = true
		}
	}
	return as, ended
}

// endWithMessage ends each push as its message did, without a send. The
// ledger only settles an attempt, so one is begun and settled at once; its
// reason says why (a crash in between reads as not sent, and this runs
// again).
func (d *Dispatcher) endWithMessage(ctx context.Context, ended []ending) {
	d.each(len(ended), func(i int) {
		e := ended[i]
		if _, err := d.o.Ledger.Begin(ctx, e.fx.Key, d.o.Worker, e.fx.Version(), d.o.Now()); err != nil {
			return // taken meanwhile, or no longer queued
		}
		d.settleKey(ctx, e.fx.Key, e.as)
	})
}

// Reasons recorded on a push ended as its message was: reasonSentWith
// when another push of the message recorded it delivered, reasonEndedWith
// before the failure another push recorded.
const (
	reasonSentWith  = "delivered: its message was, under another push's key"
	reasonEndedWith = "as its message, under another push's key: "
)

// endedWith reports whether attempt a only records the end of its
// message (endWithMessage), not a send of its own.
func endedWith(a store.Attempt) bool {
	return a.Error == reasonSentWith || strings.HasPrefix(a.Error, reasonEndedWith)
}

// interrupted returns fx's last attempt if recovery ended it (store.Recover).
func interrupted(fx store.Effect) (store.Attempt, bool) {
	n := len(fx.Attempts)
	if n == 0 {
		return store.Attempt{}, false
	}
	a := fx.Attempts[n-1]
	return a, a.Error == store.InterruptedReplayed || a.Error == store.InterruptedUnsent
}

// attemptWith returns o's attempt that went out in the same message as
// fx's attempt a, when o is another push of fx's task and recipient.
func attemptWith(o, fx store.Effect, a store.Attempt) (store.Attempt, bool) {
	if o.Key == fx.Key || o.Recipient != fx.Recipient || !ordered(o.Kind) {
		return store.Attempt{}, false
	}
	for _, b := range o.Attempts {
		if sameMessage(a, b) {
			return b, true
		}
	}
	return store.Attempt{}, false
}

// sameMessage reports whether attempts a and b sent the same message: the
// dispatcher begins a message's pushes together, so their attempts share
// start, worker and part. A redelivery mark is not a send.
func sameMessage(a, b store.Attempt) bool {
	return a.Start.Equal(b.Start) && a.By == b.By && a.Part == b.Part &&
		!strings.HasPrefix(a.Error, redeliveryMark) && !strings.HasPrefix(b.Error, redeliveryMark)
}

// earlier reports whether a comes before b in its task's order.
func earlier(a, b store.Effect) bool { return claimOrder(a, b) < 0 }

// claimOrder orders pushes by when they were claimed, then news before
// reminders, then by key. One run claims an item's news and its reminder
// at the same instant (a new item already inside its reminder window):
// the news goes first, so nobody is reminded of an item before hearing of
// it, whichever key happens to sort first, and after a restart as well.
func claimOrder(a, b store.Effect) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	if ra, rb := kindRank(a.Kind), kindRank(b.Kind); ra != rb {
		return ra - rb
	}
	return strings.Compare(a.Key, b.Key)
}

// kindRank puts a task's news before its deadline reminders.
func kindRank(kind string) int {
	if kind == KindDeadline {
		return 1
	}
	return 0
}

// sortGroup orders a group's effects as claimOrder does: the first one's
// key is the message's delivery key, whatever order the queue returned
// them in.
func sortGroup(fxs []store.Effect) { slices.SortStableFunc(fxs, claimOrder) }
