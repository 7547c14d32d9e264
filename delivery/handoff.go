package delivery

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
)

// handoffWait is how long Reserve waits for a worker when every one is
// busy. Accepting faster than the recipients take pushes only grows a
// queue, which costs each push two more durable rounds and a read of the
// queue; a short wait passes that pressure back to the sender instead,
// and still queues when a recipient is slow for longer.
const handoffWait = 50 * time.Millisecond

// Reserve offers a free local worker for one push to recipient, so the
// caller can claim it already in flight for that worker
// (store.RunCommit.Worker) and hand it over with Handoff: one durable
// round fewer than queueing it. It declines while the dispatcher is not
// running, when no worker frees up within handoffWait, when the
// recipient cannot be resolved, or when its pushes are held (quiet hours,
// mute); the caller then queues as usual. Every reservation ends with
// exactly one Handoff or release().
func (d *Dispatcher) Reserve(ctx context.Context, recipient, taskID string) (worker string, release func(), ok bool) {
	done := d.stopping()
	if done == nil {
		return "", nil, false // not running
	}
	select {
	case <-done:
		return "", nil, false
	case d.direct <- struct{}{}:
	default:
		t := time.NewTimer(handoffWait)
		defer t.Stop()
		select {
		case <-done:
			return "", nil, false
		case <-ctx.Done():
			return "", nil, false
		case <-t.C:
			return "", nil, false
		case d.direct <- struct{}{}:
		}
	}
	release = func() { <-d.direct }
	route, err := d.o.Router.Resolve(recipient)
	if err != nil {
		release()
		return "", nil, false
	}
	if _, off := d.isDisabled(ctx, recipient, d.o.Now()); off {
		release() // queued instead, to end unsent without an attempt (skipDisabled)
		return "", nil, false
	}
	if d.o.Holds != nil {
		if _, held := d.o.Holds.Hold(ctx, holdAddress(recipient, route), taskID, time.Time{}, d.o.Now()); held {
			release()
			return "", nil, false
		}
	}
	if _, on := d.digestPlan(ctx, recipient, holdAddress(recipient, route), route); on {
		release() // its notices may wait for its digest: the queue decides
		return "", nil, false
	}
	return d.o.Worker, release, true
}

// holdAddress is whose preferences hold pushes to recipient: the chat a
// named recipient points at (recipients.<name>.address), so /quiet and
// /mute set in that chat hold them too; for an inbox, its owner's private
// chat, where they set /quiet and /mute; else the recipient itself.
func holdAddress(recipient string, r Route) string {
	switch {
	case r.To.Kind.Chat():
		return r.To.String()
	case r.To.Kind == InboxAddr:
		return privateChat(r.To.ID)
	}
	return recipient
}

// privateChat is the chat in which principal talks to herald alone
// ("" when it has none).
func privateChat(principal string) string {
	if chat := address.ChatOf(principal); chat != "" {
		return chat
	}
	if kind, id, ok := strings.Cut(principal, ":"); ok && kind == "console" && id != "" {
		return principal // a console session is its principal's own chat
	}
	return ""
}

// handoffLinger bounds how long Handoff waits for the recipient to answer
// the push it handed over. A caller that answers its own sender after Handoff (an
// inbound hook's 202) passes the recipient's pace back to that sender, as
// the wait for a worker does, rather than accepting faster than pushes
// leave; a slow recipient delays the answer by this much at most.
var handoffLinger = 100 * time.Millisecond

// handoff is one push handed over to a worker.
type handoff struct {
	g       group
	release func()
}

// Handoff sends effects claimed in flight for this dispatcher's worker
// (after Reserve) and records their outcome; release is called when done.
// It returns once the recipient answered the push (or nothing is to be
// sent), or after handoffLinger. An idle hand-off goroutine of Run takes
// it; one that has grown its stack on earlier sends does not grow it again
// for each push. When none is idle (all busy for a moment, or Run ending),
// a goroutine of its own sends it.
func (d *Dispatcher) Handoff(fxs []store.Effect, msg Message, release func()) {
	msg.Items = slices.Clone(msg.Items)
	sortItems(msg.Items) // as merge would
	sent := make(chan struct{})
	h := handoff{g: group{fx: fxs, begun: true, msg: &msg, answered: sync.OnceFunc(func() { close(sent) })}, release: release}
	d.directWG.Add(1)
	select {
	case d.handoffs <- h:
	default:
		go d.hand(h)
	}
	t := time.NewTimer(handoffLinger)
	defer t.Stop()
	select {
	case <-sent:
	case <-t.C:
	}
}

func (d *Dispatcher) hand(h handoff) {
	defer d.directWG.Done()
	defer h.release()
	d.deliver(context.Background(), h.g)
	h.g.answered() // when nothing was sent
}

// handing serves hand-offs until ctx ends.
func (d *Dispatcher) handing(ctx context.Context) {
	for {
		select {
		case h := <-d.handoffs:
			d.hand(h)
		case <-ctx.Done():
			return
		}
	}
}

// stopping is closed once the dispatcher is shutting down.
func (d *Dispatcher) stopping() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done
}
