package delivery

import (
	"context"
	"fmt"
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
	fx, err := l.Get(ctx, key)
	if err != nil {
		return fx, 0, err
	}
	keys := []string{key}
	if ordered(fx.Kind) && fx.State != store.Pending {
		all, err := l.List(ctx, fx.TaskID, orderScan)
		if err != nil {
			return fx, 0, fmt.Errorf("find the message %s was sent in: %w", key, err)
		}
		keys = append(keys, sentWith(fx, all)...)
	}
	at := now
	if len(keys) > 1 {
		at = now.Add(RedeliverGather)
	}
	out, n := fx, 0
	for _, k := range keys {
		got, err := l.Redeliver(ctx, k, who, at)
		if err != nil {
			if k == key {
				return got, n, err
			}
			continue // a companion no longer ended (redelivered already): it goes anyway
		}
		if k == key {
			out = got
		}
		n++
	}
	return out, n, nil
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
