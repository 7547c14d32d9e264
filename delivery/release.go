package delivery

import (
	"context"
	"time"
)

// Reasons recorded on pushes that wait without an attempt.
const (
	reasonHeld         = "held: quiet hours or mute"
	reasonTransportOff = "waiting: transport is off"
	// reasonNothingNew ends pushes whose items were all added and removed
	// again while held: no message is sent.
	reasonNothingNew = "not sent: added and removed while held, nothing new to tell"
	// reasonDigestChanged is recorded on a push held for a digest that
	// was changed or switched off (/digest): released, it is held again
	// for the digest as it is now, or sent.
	reasonDigestChanged = "released: the digest changed"
)

// releaseScan bounds how many queued pushes one Release looks at.
const releaseScan = 10000

// Release makes the pushes held for address (its quiet hours, mutes or
// digest) due now, so that lifting /quiet, /mute or /digest lets them out
// at once: each
// task's held pushes come due together and go out as one collapsed
// message. The dispatcher checks the holds again when it takes them, so
// what is still held (another mute, quiet hours still on) is held again.
// It returns how many pushes it released.
func (d *Dispatcher) Release(ctx context.Context, address string) (int, error) {
	now := d.o.Now()
	queued, err := d.o.Ledger.Due(ctx, now.Add(100*365*24*time.Hour), releaseScan)
	if err != nil {
		return 0, err
	}
	d.releasing.Lock()
	defer d.releasing.Unlock()
	n := 0
	for _, fx := range queued {
		if (fx.Error != reasonHeld && fx.Error != reasonDigest) || !fx.NotBefore.After(now) {
			continue
		}
		route, err := d.o.Router.Resolve(fx.Recipient)
		if err != nil || holdAddress(fx.Recipient, route) != address {
			continue
		}
		reason := "" // quiet hours and mutes: the hold stage looks again
		if fx.Error == reasonDigest {
			reason = reasonDigestChanged // held anew for the digest as it is now
		}
		if _, err := d.o.Ledger.Defer(ctx, fx.Key, now, reason, now); err == nil {
			n++
		}
	}
	if n > 0 {
		d.o.Metrics.Released.Add(float64(n))
		d.Wake()
	}
	return n, nil
}
