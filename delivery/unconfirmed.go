package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/herald-bridge/herald/store"
)

// reasonUnconfirmed is recorded on the attempt of a push that was claimed
// in flight for a hand-off whose commit gave no answer: the hand-off never
// happened, so nothing was sent.
const reasonUnconfirmed = "not sent: the claim's answer was lost"

// Unconfirmed is told the key of a push that a caller tried to claim in
// flight for this dispatcher's worker (after Reserve) when the store's
// answer was lost: the commit failed as far as the caller knows, but it
// may have been stored (a connection that broke after the write). If it
// was, the push sits in flight for this live worker and nobody would ever
// send it or recover it. Since it was never handed over, it provably was
// not sent: it goes back to the queue (I3 allows that retry). Keys are
// checked in the background until the store answers, for as long as an
// outcome is kept (settleFor) and not past shutdown.
func (d *Dispatcher) Unconfirmed(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.limbo == nil {
		d.limbo = map[string]time.Time{}
	}
	if _, ok := d.limbo[key]; ok {
		return
	}
	d.limbo[key] = time.Now().Add(settleFor)
	if len(d.limbo) == 1 {
		d.directWG.Add(1)
		go d.resolveLimbo()
	}
}

// resolveLimbo checks the unconfirmed keys until none is left.
func (d *Dispatcher) resolveLimbo() {
	defer d.directWG.Done()
	wait := 100 * time.Millisecond
	for {
		d.mu.Lock()
		keys := make([]string, 0, len(d.limbo))
		for k := range d.limbo {
			keys = append(keys, k)
		}
		d.mu.Unlock()
		for _, k := range keys {
			if d.resolveUnconfirmed(k) {
				d.mu.Lock()
				delete(d.limbo, k)
				d.mu.Unlock()
			}
		}
		d.mu.Lock()
		now := time.Now()
		for k, until := range d.limbo {
			if now.After(until) {
				d.o.Log.Error().Str("effect", k).Msg("the store did not answer about an unconfirmed claim; if it was stored, it reads as unknown after a restart")
				delete(d.limbo, k)
			}
		}
		left := len(d.limbo)
		d.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-time.After(wait):
		case <-d.stopping(): // shutdown: a stored claim recovers as unknown at the next start
			d.mu.Lock()
			d.limbo = nil
			d.mu.Unlock()
			return
		}
		wait = min(wait*2, 5*time.Second)
	}
}

// resolveUnconfirmed queues key again if it was claimed in flight for this
// worker and never attempted; it reports whether key is settled either
// way (false: the store did not answer, ask again later).
func (d *Dispatcher) resolveUnconfirmed(key string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fx, err := d.o.Ledger.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true // the claim was not stored: the caller's refusal stands
	case err != nil:
		return false
	}
	if fx.State != store.Pending || !fx.InFlight || fx.Worker != d.o.Worker || len(fx.Attempts) != 1 || fx.PartsSent != 0 {
		return true // not the claim left in limbo
	}
	_, err = d.o.Ledger.Settle(ctx, key, store.Outcome{State: store.Pending, RetryAt: d.o.Now(), Error: reasonUnconfirmed}, d.o.Now())
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if err != nil {
		d.o.Log.Warn().Err(err).Str("effect", key).Msg("cannot queue an unconfirmed claim again")
		return true
	}
	d.Wake()
	return true
}
