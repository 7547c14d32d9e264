package delivery_test

import (
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// A recipient whose host refuses the connection is tried again with a
// growing wait — 5 s, 10 s, 20 s, 40 s — not every 5 s flat; nothing was
// sent, so each retry is automatic (I3). The receiver listens nowhere.
func TestUnreachableRecipientIsRetriedWithBackoffNotFlat(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	route := webhookRoute(t, rv, false)
	rv.Close() // connection refused from now on
	key := r.admit("hook:ci", "build-1", "ops", inbound("build 1"), 0)
	r.start(route, "w", nil)
	for i, wait := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second} {
		var fx store.Effect
		waitFor(t, func() bool {
			fx = r.effect(key)
			return len(fx.Attempts) == i+1 && !fx.InFlight && fx.State == store.Pending
		}, "attempt %d to be settled", i+1)
		if fx.Error != delivery.ReasonConnectFailed {
			t.Fatalf("attempt %d: error %q, want %s", i+1, fx.Error, delivery.ReasonConnectFailed)
		}
		if got := fx.NotBefore.Sub(r.clock.Now()); got != wait {
			t.Fatalf("after attempt %d the next waits %v, want %v", i+1, got, wait)
		}
		r.advance(wait - time.Second)
		if n := len(r.effect(key).Attempts); n != i+1 {
			t.Fatalf("attempt %d came before its %v wait", n, wait)
		}
		r.advance(time.Second)
	}
}
