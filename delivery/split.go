package delivery

import (
	"context"

	"github.com/herald-bridge/herald/store"
)

// splitByType splits a group for a webhook recipient by message type: a
// webhook body carries one type, so deadline reminders go as their own
// watch.deadline POST, after the run's watch.changed one: a reminder of an
// item must not arrive before the news of it (order.go). Chats get the
// group as one message.
func splitByType(_ context.Context, _ *Dispatcher, b *batch) []*batch {
	each := oneTypeEach(b.route, b.fx)
	if len(each) == 1 {
		return pass(b)
	}
	out := make([]*batch, len(each))
	for i, fx := range each {
		one := *b
		one.fx = fx
		out[i] = &one
	}
	return out
}

// oneTypeEach returns live as one group, or for a webhook recipient as
// its news and then its deadline reminders.
func oneTypeEach(route Route, live []store.Effect) [][]store.Effect {
	if route.To.Kind != Webhook {
		return [][]store.Effect{live}
	}
	var deadlines, rest []store.Effect
	for _, fx := range live {
		if fx.Kind == KindDeadline {
			deadlines = append(deadlines, fx)
		} else {
			rest = append(rest, fx)
		}
	}
	if len(deadlines) == 0 || len(rest) == 0 {
		return [][]store.Effect{live}
	}
	return [][]store.Effect{rest, deadlines}
}
