package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// RedeliverGather is how far ahead a redelivered message of several pushes
// is queued: every push it carried is queued again before any dispatcher,
// on any replica, can take one of them alone.
const RedeliverGather = 2 * time.Second

// Redeliver queues an ended push again: an explicit human replay,
// recorded with who (docs/delivery.md, Reading the ledger). The unit of
// a redelivery is the message: a push that went out in a grouped message
// is queued again with every push that message carried, due together, so
// the dispatcher sends that message again as it was sent, under the same
// delivery key (a webhook's webhook-id). A receiver that drops repeats by
// that key drops it; one that never got it takes it once. It returns the
// push named by key and how many pushes were queued again in all.
func Redeliver(ctx context.Context, l store.Ledger, key, who string, now time.Time) (store.Effect, int, error) {
	fx, queued, err := redeliver(ctx, l, key, who, now)
	return fx, len(queued), err
}

// redeliver is Redeliver, returning the keys it queued again.
func redeliver(ctx context.Context, l store.Ledger, key, who string, now time.Time) (store.Effect, []string, error) {
	fx, err := l.Get(ctx, key)
	if err != nil {
		return fx, nil, err
	}
	keys := []string{key}
	if ordered(fx.Kind) && fx.State != store.Pending {
		all, err := l.List(ctx, fx.TaskID, orderScan)
		if err != nil {
			return fx, nil, fmt.Errorf("find the message %s was sent in: %w", key, err)
		}
		keys = append(keys, sentWith(fx, all)...)
	}
	at := now
	if len(keys) > 1 {
		at = now.Add(RedeliverGather)
	}
	out, queued := fx, []string(nil)
	for _, k := range keys {
		got, err := l.Redeliver(ctx, k, who, at)
		if err != nil {
			if k == key {
				return got, queued, err
			}
			continue // a companion no longer ended (redelivered already): it goes anyway
		}
		if k == key {
			out = got
		}
		queued = append(queued, k)
	}
	return out, queued, nil
}

// Range selects the ended pushes of one recipient for a range
// redelivery (herald ledger redeliver --recipient, SPEC §21).
type Range struct {
	Recipient string
	// States are the outcomes replayed: failed and unknown (empty: both).
	// A completed push is never replayed.
	States []store.EffectState
	// Since and Until bound when the push was claimed: Since <= CreatedAt
	// < Until; a zero bound is open.
	Since, Until time.Time
}

// Matches reports whether q selects fx.
func (q Range) Matches(fx store.Effect) bool {
	states := q.States
	if len(states) == 0 {
		states = []store.EffectState{store.Failed, store.Unknown}
	}
	return fx.Recipient == q.Recipient && slices.Contains(states, fx.State) && fx.State != store.Completed &&
		(q.Since.IsZero() || !fx.CreatedAt.Before(q.Since)) && (q.Until.IsZero() || fx.CreatedAt.Before(q.Until))
}

// RedeliverRange queues again, as an explicit human replay recorded with
// who, each push among fxs that q selects, oldest first, under its own
// delivery key (a webhook's original webhook-id) and with the message it
// was sent in (Redeliver). No push is queued twice by one call: one that
// went along with an earlier one's message is not queued again. With
// dryRun it only lists them. It returns the pushes q selected, and the
// keys it queued (the selected ones and the pushes their messages
// carried).
func RedeliverRange(ctx context.Context, l store.Ledger, fxs []store.Effect, q Range, who string, now time.Time, dryRun bool) (selected []store.Effect, queued []string, err error) {
	for _, fx := range fxs {
		if q.Matches(fx) {
			selected = append(selected, fx)
		}
	}
	slices.SortFunc(selected, func(a, b store.Effect) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if dryRun {
		return selected, nil, nil
	}
	done := map[string]bool{}
	for _, fx := range selected {
		if done[fx.Key] {
			continue
		}
		_, keys, err := redeliver(ctx, l, fx.Key, who, now)
		for _, k := range keys {
			done[k] = true
		}
		queued = append(queued, keys...)
		if err != nil && !errors.Is(err, store.ErrIllegalTransition) {
			return selected, queued, err
		}
	}
	return selected, queued, nil
}

// sentWith returns the keys of the other ended pushes among all that were
// sent in the same message as fx (attemptWith).
func sentWith(fx store.Effect, all []store.Effect) []string {
	last, ok := lastSent(fx)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range all {
		if _, ok := attemptWith(c, fx, last); ok && c.State != store.Pending {
			out = append(out, c.Key)
		}
	}
	return out
}

// lastSent is fx's last attempt that was a send (not a redelivery mark,
// nor the record that another push's send delivered it).
func lastSent(fx store.Effect) (store.Attempt, bool) {
	for i := len(fx.Attempts) - 1; i >= 0; i-- {
		if a := fx.Attempts[i]; !strings.HasPrefix(a.Error, redeliveryMark) && !endedWith(a) {
			return a, true
		}
	}
	return store.Attempt{}, false
}
