package delivery

import (
	"context"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
)

// HoldPolicy decides whether a recipient's pushes are held right now
// (quiet hours, mute) and until when.
type HoldPolicy interface {
	Hold(ctx context.Context, recipient, taskID string, urgentDue time.Time, now time.Time) (until time.Time, held bool)
}

// hold keeps the batch's pushes queued, without an attempt, while the
// recipient holds them (Options.Holds): until the hold ends, or, for a
// deadline reminder, until it becomes urgent.
func hold(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if d.o.Holds == nil {
		return pass(b)
	}
	until, held := d.o.Holds.Hold(ctx, holdAddress(b.recipient(), b.route), b.taskID(), b.urgent, b.now)
	if !held {
		return pass(b)
	}
	d.holdAll(ctx, b, b.fx, until, reasonHeld)
	return nil
}

// holdAll holds fxs, queued, until until without an attempt, recording
// reason (a hold, or a digest).
func (d *Dispatcher) holdAll(ctx context.Context, b *batch, fxs []store.Effect, until time.Time, reason string) {
	log := b.log(d)
	d.each(len(fxs), func(i int) {
		if _, err := d.o.Ledger.Defer(ctx, fxs[i].Key, until, reason, b.now); err != nil {
			log.Warn().Err(err).Msg("cannot hold a push")
		}
		d.o.Metrics.Held.Inc()
	})
}

// UrgentWindow: a deadline reminder due within this bypasses quiet hours.
const UrgentWindow = 2 * time.Hour

// PrefHolds is the HoldPolicy a chat sets for itself with /quiet and
// /mute (chatprefs).
type PrefHolds struct {
	Prefs *chatprefs.Store
}

// Hold implements HoldPolicy: a muted task is held until the mute ends; quiet
// hours hold everything except deadline reminders due within UrgentWindow,
// and hold a later reminder only until it comes within that window.
func (h PrefHolds) Hold(ctx context.Context, recipient, taskID string, urgentDue, now time.Time) (time.Time, bool) {
	if !hasPrefs(recipient) {
		return time.Time{}, false
	}
	p, err := h.Prefs.Get(ctx, recipient)
	if err != nil {
		return time.Time{}, false
	}
	if until, ok := p.Mutes[taskID]; ok && now.Before(until) {
		return until, true
	}
	if p.Quiet == "" {
		return time.Time{}, false
	}
	if !urgentDue.IsZero() && urgentDue.Sub(now) <= UrgentWindow {
		return time.Time{}, false
	}
	from, to, err := chatprefs.ParseQuiet(p.Quiet)
	if err != nil {
		return time.Time{}, false
	}
	until, held := quietUntil(now.In(h.Prefs.Location(p)), from, to)
	if held && !urgentDue.IsZero() {
		// A reminder is held only until it becomes urgent, so quiet hours
		// never make it miss its deadline.
		until = notAfter(until, urgentDue.Add(-UrgentWindow))
	}
	return until, held
}

// hasPrefs reports whether address can have chatprefs.Prefs: only chats set them
// (/quiet, /mute; the console too), so other addresses skip the store read.
func hasPrefs(address string) bool {
	kind, _, _ := strings.Cut(address, ":")
	return AddressKind(kind).Chat() || kind == "console"
}

// quietUntil reports whether local time now lies in [from, to) (which may
// wrap midnight) and when the window ends.
func quietUntil(now time.Time, from, to time.Duration) (time.Time, bool) {
	y, m, d := now.Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	tod := now.Sub(midnight)
	at := func(day int, off time.Duration) time.Time {
		base := time.Date(y, m, d+day, 0, 0, 0, 0, now.Location())
		return base.Add(off)
	}
	if from < to {
		if tod >= from && tod < to {
			return at(0, to), true
		}
		return time.Time{}, false
	}
	switch { // wraps midnight, e.g. 22:00-07:00
	case tod >= from:
		return at(1, to), true
	case tod < to:
		return at(0, to), true
	}
	return time.Time{}, false
}

var _ HoldPolicy = PrefHolds{}
