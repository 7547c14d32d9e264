package delivery

import (
	"encoding/json"
	"slices"

	"github.com/herald-bridge/herald/store"
)

// superseded marks, among a group's decoded messages, the changes whose
// item the group lists again in a later state (A→B→C while held: A and B),
// so the message says C once. The superseded effects stay in the group:
// they are begun and settled with the message that carries their item's
// later state, so none reads as delivered unless that message was (I3),
// and a retry or replay of the group sends the same collapsed message.
func superseded(fxs []store.Effect, msgs []Message) []bool {
	out := make([]bool, len(fxs))
	if len(fxs) < 2 {
		return out
	}
	latest := map[string]int{}
	for i, m := range msgs {
		if fxs[i].Kind != KindChanged || len(m.Items) != 1 {
			continue
		}
		id := m.Items[0].ID
		if j, ok := latest[id]; ok {
			if fxs[j].CreatedAt.Before(fxs[i].CreatedAt) {
				out[j], latest[id] = true, i
			} else {
				out[i] = true
			}
			continue
		}
		latest[id] = i
	}
	return out
}

// merge builds one message from a group's payloads, each decoded once;
// superseded changes are left out (superseded).
func merge(fxs []store.Effect) (Message, error) {
	msgs := make([]Message, len(fxs))
	for i, fx := range fxs {
		if err := json.Unmarshal(fx.Payload, &msgs[i]); err != nil {
			return Message{}, err
		}
	}
	skip := superseded(fxs, msgs)
	var out Message
	first := true
	for i, m := range msgs {
		if skip[i] {
			continue
		}
		if first {
			out, first = m, false
			out.Items = nil
		}
		if m.Kind == KindChanged {
			out.Kind = KindChanged
		}
		if m.OccurredAt.After(out.OccurredAt) {
			out.OccurredAt = m.OccurredAt
		}
		out.Items = append(out.Items, m.Items...)
	}
	sortItems(out.Items)
	return out, nil
}

// sortItems puts deadlines first, then new, then changed items.
func sortItems(items []Item) {
	slices.SortStableFunc(items, func(a, b Item) int { return changeRank(a.Change) - changeRank(b.Change) })
}

func changeRank(c string) int {
	switch c {
	case ChangeDeadline:
		return 0
	case ChangeNew:
		return 1
	case ChangeChanged:
		return 2
	}
	return 3
}
