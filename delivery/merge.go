package delivery

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/herald-bridge/herald/store"
)

// compose builds the message the claimed pushes send (merge), unless it
// is known already (handed over). Payloads that do not decode fail; a
// group whose items all came and went while held ends without a send,
// as there is nothing left to tell.
func compose(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if b.msg != nil {
		return pass(b)
	}
	m, empty, err := merge(b.fx)
	if err != nil {
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			return store.Outcome{State: store.Failed, Error: "bad_payload"}
		})
		return nil
	}
	if empty && b.fx[0].PartsSent == 0 {
		// Every item came and went while held: nothing crosses the
		// boundary, and there is nothing left to tell.
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			return store.Outcome{State: store.Completed, Error: reasonNothingNew}
		})
		return nil
	}
	b.msg = &m
	return pass(b)
}

// merge builds one message from a group's payloads, each decoded once.
// The recipient has been told nothing of the group yet, so the message
// says what is new to them (fold): an item changing A→B→C while held is
// said once, as C; one added and then changed is new, with its latest
// title; one added and then removed is not shown at all. The folded
// effects stay in the group: they are begun and settled with the message
// that carries (or drops) their item, so none reads as delivered unless
// that message was (I3), and a retry or replay of the group sends the
// same collapsed message. A group whose items all folded away has
// nothing to say: empty reports it, and nothing is sent.
func merge(fxs []store.Effect) (out Message, empty bool, err error) {
	msgs := make([]Message, len(fxs))
	for i, fx := range fxs {
		if err := json.Unmarshal(fx.Payload, &msgs[i]); err != nil {
			return Message{}, false, err
		}
	}
	// Fold in the order the events happened.
	order := make([]int, len(fxs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return fxs[a].CreatedAt.Compare(fxs[b].CreatedAt) })
	var items []Item
	pos := map[string]int{}   // item id → its folded entry in items
	gone := map[string]bool{} // items added and removed within the group
	first := true
	for _, i := range order {
		m := msgs[i]
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
		for _, it := range m.Items {
			if it.Change == ChangeDeadline || it.ID == "" {
				items = append(items, it)
				continue
			}
			j, seen := pos[it.ID]
			if !seen {
				pos[it.ID] = len(items)
				items = append(items, it)
				delete(gone, it.ID)
				continue
			}
			if folded, keep := fold(items[j], it); keep {
				items[j] = folded
				delete(gone, it.ID)
			} else {
				items[j].Change, gone[it.ID] = "", true // dropped below
			}
		}
	}
	for _, it := range items {
		if it.Change == "" || (it.Change == ChangeDeadline && gone[it.ID]) {
			continue
		}
		out.Items = append(out.Items, it)
	}
	sortItems(out.Items)
	return out, len(out.Items) == 0 && len(items) > 0 && out.Text == "", nil
}

// fold combines what the recipient is to be told of one item (was) with a
// later change of it (next). keep is false when nothing is left to say:
// the item was new to them and is gone again.
func fold(was, next Item) (Item, bool) {
	switch {
	case was.Change == ChangeNew && next.Change == ChangeRemoved:
		return Item{}, false
	case was.Change == ChangeNew && next.Change == ChangeChanged:
		next.Change, next.WasTitle, next.WasDue = ChangeNew, "", time.Time{}
		next.Diff = nil // new to them: no lines changed since they heard of it
		return next, true
	case was.Change == ChangeChanged && next.Change == ChangeChanged:
		// Before: what they were last told (the first change's "was").
		next.WasTitle, next.WasDue = was.WasTitle, was.WasDue
		if next.WasTitle == next.Title {
			next.WasTitle = ""
		}
		if next.WasDue.Equal(next.Due) {
			next.WasDue = time.Time{}
		}
		return next, true
	}
	return next, true // changed then removed: removed; removed then new: new
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
