package delivery

import (
	"context"
	"github.com/herald-bridge/herald/delivery/address"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Reserve offers a free local worker for one push to recipient, so the
// caller can claim it already in flight for that worker
// (store.RunCommit.Worker) and hand it over with Handoff: one durable
// round fewer than queueing it. It declines while the dispatcher is not
// running, every slot is busy, the recipient cannot be resolved, or its
// pushes are held (quiet hours, mute); the caller then queues as usual.
// Every reservation ends with exactly one Handoff or release().
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
		return "", nil, false
	}
	release = func() { <-d.direct }
	route, err := d.o.Router.Resolve(recipient)
	if err != nil {
		release()
		return "", nil, false
	}
	if d.o.Holds != nil {
		if _, held := d.o.Holds.Hold(ctx, holdAddress(recipient, route), taskID, time.Time{}, d.o.Now()); held {
			release()
			return "", nil, false
		}
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

// Handoff sends effects claimed in flight for this dispatcher's worker
// (after Reserve) and records their outcome; release is called when done.
func (d *Dispatcher) Handoff(fxs []store.Effect, msg Message, release func()) {
	d.directWG.Add(1)
	go func() {
		defer d.directWG.Done()
		defer release()
		msg.Items = slices.Clone(msg.Items)
		sortItems(msg.Items) // as merge would
		d.deliver(context.Background(), group{fx: fxs, begun: true, msg: &msg})
	}()
}

// stopping is closed once the dispatcher is shutting down.
func (d *Dispatcher) stopping() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done
}
