package delivery

import (
	"context"
	"math/rand/v2"
	"time"
)

// ReasonRetriesExhausted ends a push still failing after the last retry
// of its recipient's schedule.
const ReasonRetriesExhausted = "retries_exhausted"

// Jitter is the most a scheduled retry's wait is stretched: 10 %.
const Jitter = 0.1

// retry applies the recipient's retry schedule (SPEC §21) to an attempt
// that failed in a way the schedule retries: one that may have arrived
// (a timeout, a lost connection, a 5xx, 408/409/425) or provably did not
// (429, a refused connection). The recipient deduplicates by the
// delivery key, so the push goes again under the same key, after the
// schedule's wait for this retry, or the Retry-After the answer asked
// for when that is later. Past the last retry the push ends failed
// (retries_exhausted). Routes without a schedule keep I3's rules
// (settle).
func retry(_ context.Context, d *Dispatcher, b *batch) []*batch {
	sch := b.route.Retry.Schedule
	if len(sch) == 0 || b.out.Result != Unknown && b.out.Result != RetryAfter {
		return pass(b)
	}
	done := partAttempts(b.fx[0], b.part) - 1 // retries made before this attempt
	kind := string(b.route.To.Kind)
	if done >= len(sch) {
		b.out = Outcome{Result: Failed, Reason: ReasonRetriesExhausted}
		d.o.Metrics.Retries.WithLabelValues(kind, "exhausted").Inc()
		return pass(b)
	}
	wait := max(jittered(sch[done], d.o.Jitter()), b.out.After)
	at := d.o.Now().Add(wait)
	for _, fx := range b.fx {
		if !fx.ExpiresAt.IsZero() && !at.Before(fx.ExpiresAt) {
			// The retry would come after the push expires. The group
			// ends together now, as it stands, rather than part of it
			// going out later under another key; one that may have
			// arrived stays unknown (I3), never "expired".
			if b.out.Result == RetryAfter {
				b.out = Outcome{Result: Failed, Reason: "expired"}
			}
			return pass(b)
		}
	}
	b.out = Outcome{Result: RetryAfter, After: wait, Reason: b.out.Reason}
	d.o.Metrics.Retries.WithLabelValues(kind, "scheduled").Inc()
	return pass(b)
}

// jittered stretches wait by up to Jitter, by j in [0, 1).
func jittered(wait time.Duration, j float64) time.Duration {
	return wait + time.Duration(float64(wait)*Jitter*j)
}

// scheduleAttempts is how many attempts a part of a message gets under
// schedule: the first and one per retry.
func scheduleAttempts(schedule []time.Duration) int { return 1 + len(schedule) }

func defaultJitter() float64 { return rand.Float64() }
