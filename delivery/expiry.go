package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/herald-bridge/herald/store"
)

// expiry ends the pushes whose expiry has come, unsent (failed
// "expired"), and passes the rest on, noting the earliest due time of
// their deadline reminders (hold lets an urgent one through quiet hours).
func expiry(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	var live, expired []store.Effect
	var urgent time.Time
	for _, fx := range b.fx {
		if !fx.ExpiresAt.IsZero() && !b.now.Before(fx.ExpiresAt) {
			expired = append(expired, fx)
			continue
		}
		if fx.Kind == KindDeadline {
			if due := fx.ExpiresAt; !due.IsZero() && (urgent.IsZero() || due.Before(urgent)) {
				urgent = due
			}
		}
		live = append(live, fx)
	}
	d.each(len(expired), func(i int) { d.expire(ctx, expired[i].Key, "expired", b.now) })
	if len(live) == 0 {
		return nil
	}
	b.fx, b.urgent = live, urgent
	return pass(b)
}

// expire ends a queued push unsent, as failed with reason.
func (d *Dispatcher) expire(ctx context.Context, key, reason string, now time.Time) {
	if _, err := d.o.Ledger.Expire(ctx, key, reason, now); err != nil && !errors.Is(err, store.ErrIllegalTransition) {
		d.o.Log.Warn().Err(err).Str("effect", key).Msg("cannot expire a push")
	}
}
