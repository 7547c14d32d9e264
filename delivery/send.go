package delivery

import "context"

// transmit hands the batch's message, the part due, to the recipient's
// sink, which sends it and classifies the outcome (settle records it).
// A sink never retries.
func transmit(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	first := b.fx[0]
	b.part, b.attempt = first.PartsSent, len(first.Attempts)
	b.out = b.route.Sink.Send(ctx, Delivery{Key: first.Key, To: b.route.To, Message: d.present(b), Lang: b.route.Lang, Zone: b.route.Zone, Attempt: b.attempt, Part: b.part})
	if b.answered != nil {
		b.answered()
		b.answered = nil
	}
	d.o.Metrics.Attempts.WithLabelValues(string(b.route.To.Kind), attemptResult(b.out)).Inc()
	if b.out.MigratedTo != "" && d.o.Hooks.Migrated != nil {
		d.o.Hooks.Migrated(ctx, b.taskID(), b.recipient(), b.out.MigratedTo)
	}
	return pass(b)
}

// attemptResult is an attempt's result as herald_delivery_attempts_total
// counts it: a receiver that could not be reached at all (connection
// refused, no such host) is "unreachable", not the retry_after of a
// receiver that answered "later".
func attemptResult(o Outcome) string {
	if o.Result == RetryAfter && (o.Reason == ReasonConnectFailed || o.Reason == ReasonDNS) {
		return "unreachable"
	}
	return o.Result.String()
}
