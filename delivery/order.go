package delivery

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Order (README, Operations: Order and held digests): within one task
// and recipient, a task's notices (watch.changed, watch.deadline) arrive
// in the order their events happened. Three rules keep it:
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

// inOrder looks for earlier pushes of live's task to its recipient that
// have not ended. It returns live with those that join it, or, when the
// group must wait behind one, the time to look again. Only a group none
// of whose members was attempted takes others along: a group attempted
// before must carry again exactly what it carried (a replay or a
// redelivery under the same key, which a receiver may drop as a repeat),
// so it goes alone, after whatever is older than all its members.
func (d *Dispatcher) inOrder(ctx context.Context, live []store.Effect, now time.Time) ([]store.Effect, time.Time) {
	if !ordered(live[0].Kind) {
		return live, time.Time{}
	}
	fxs, err := d.o.Ledger.List(ctx, live[0].TaskID, orderScan)
	if err != nil {
		d.o.Log.Warn().Err(err).Str("task", live[0].TaskID).Msg("cannot check for earlier pushes; waiting")
		return nil, now.Add(orderWait)
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
	var wait time.Time
	later := func(t time.Time) {
		if t.After(wait) {
			wait = t
		}
	}
	out := live
	for _, o := range fxs {
		if o.State != store.Pending || in[o.Key] || o.Recipient != live[0].Recipient || !ordered(o.Kind) ||
			o.CreatedAt.After(newest) || (!o.ExpiresAt.IsZero() && !now.Before(o.ExpiresAt)) {
			continue
		}
		held := o.Error == reasonHeld && o.NotBefore.After(now)
		switch {
		case o.InFlight:
			later(now.Add(orderWait))
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
		return nil, wait
	}
	return out, time.Time{}
}

// earlier reports whether a was claimed before b (by time, then key).
func earlier(a, b store.Effect) bool {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c < 0
	}
	return a.Key < b.Key
}

// sortGroup orders a group's effects by when they were claimed, then by
// key: the first one's key is the message's delivery key, whatever order
// the queue returned them in.
func sortGroup(fxs []store.Effect) {
	slices.SortStableFunc(fxs, func(a, b store.Effect) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}
