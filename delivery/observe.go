package delivery

import (
	"context"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// observeScan bounds how many queued pushes one reading of the retry
// gauges looks at; past it the gauges count the earliest due.
const observeScan = 5000

// observeHorizon is how far ahead of now the queue is read: further than
// any scheduled retry waits.
const observeHorizon = 30 * 24 * time.Hour

// observing reads the retry and disable gauges every Options.Observe,
// the first time one interval after the start, until ctx ends. Every replica reads the same shared queue and switches,
// so each reports the same numbers.
func (d *Dispatcher) observing(ctx context.Context) {
	t := time.NewTicker(d.o.Observe)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.observe(ctx)
	}
}

// observe reads the gauges once.
func (d *Dispatcher) observe(ctx context.Context) {
	now := d.o.Now()
	if fxs, err := d.o.Ledger.Due(ctx, now.Add(observeHorizon), observeScan); err == nil {
		n, oldest := waitingRetries(fxs, now)
		d.o.Metrics.RetriesWaiting.Set(float64(n))
		d.o.Metrics.OldestRetry.Set(oldest.Seconds())
	}
	if d.o.Recipients != nil {
		if off, err := d.o.Recipients.Disabled(ctx); err == nil {
			d.o.Metrics.Disabled.Set(float64(len(off)))
		}
	}
}

// waitingRetries counts the queued pushes whose last attempt failed and
// which wait to be sent again, and how long ago the oldest of them first
// failed.
func waitingRetries(fxs []store.Effect, now time.Time) (n int, oldest time.Duration) {
	for _, fx := range fxs {
		if !waitsForRetry(fx) {
			continue
		}
		n++
		if first := firstPartAttempt(fx); !first.IsZero() {
			oldest = max(oldest, now.Sub(first))
		}
	}
	return n, oldest
}

// waitsForRetry reports whether a queued push waits after a failed
// attempt (not a held one, nor one queued again by a redelivery or a
// recovery of an attempt never sent).
func waitsForRetry(fx store.Effect) bool {
	if !fx.Progress().Queued() || len(fx.Attempts) == 0 {
		return false
	}
	a := fx.Attempts[len(fx.Attempts)-1]
	return a.Outcome == store.Pending && !a.End.IsZero() && a.Error != "" &&
		!strings.HasPrefix(a.Error, redeliveryMark) && a.Error != store.InterruptedUnsent && a.Error != reasonUnconfirmed
}
