package delivery

import (
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// replayMargin keeps a replay after a crash clear of the end of the
// provider's dedup window: it is queued due at once, but the queue may be
// long.
const replayMargin = 10 * time.Minute

// Replayable reports whether fx, whose last attempt was interrupted by a
// crash after its request may have left, may be sent again under the same
// key (store.Recovery.Replay): its recipient deduplicates by the key (an
// inbox keeps one item per key; a webhook recipient marked idempotent; a
// Feishu uuid inside Feishu's window), the automatic replays of that part
// are not used up, and it has not expired. Anything else stays unknown
// (I3).
func (d *Dispatcher) Replayable(fx store.Effect) bool {
	route, err := d.o.Router.Resolve(fx.Recipient)
	if err != nil || !route.Dedups {
		return false
	}
	now := d.o.Now()
	if !fx.ExpiresAt.IsZero() && !now.Before(fx.ExpiresAt) {
		return false
	}
	bound := d.o.MaxIdempotentAttempts
	if sch := route.Retry.Schedule; len(sch) > 0 {
		bound = scheduleAttempts(sch)
	}
	if partAttempts(fx, fx.PartsSent) >= bound {
		return false
	}
	if w := route.DedupWindow; w > 0 {
		first := firstPartAttempt(fx)
		if first.IsZero() || now.Sub(first) > w-replayMargin {
			return false
		}
	}
	return true
}

// firstPartAttempt is when the current part of fx was first attempted
// since the last human redelivery: the provider's window counts from there.
func firstPartAttempt(fx store.Effect) time.Time {
	var at time.Time
	for i := len(fx.Attempts) - 1; i >= 0; i-- {
		a := fx.Attempts[i]
		if a.Part != fx.PartsSent || strings.HasPrefix(a.Error, redeliveryMark) {
			break
		}
		at = a.Start
	}
	return at
}

// partAttempts counts the attempts recorded for part of fx since the last
// human redelivery: the bound and the backoff of automatic replays are per
// part, and a redelivery starts them afresh.
func partAttempts(fx store.Effect, part int) int {
	n := 0
	for i := len(fx.Attempts) - 1; i >= 0; i-- {
		a := fx.Attempts[i]
		if strings.HasPrefix(a.Error, redeliveryMark) || a.Part != part {
			break
		}
		n++
	}
	return n
}

// redeliveryMark starts the error of the attempt entry the ledger records
// for an explicit human redelivery.
const redeliveryMark = store.RedeliveryMark
