package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// TestI3_RedeliveryOfAGroupedPushResendsItsMessageUnderTheSameID: two
// changes go out as one POST; the receiver takes it and the answer is
// lost, so both end unknown. Redelivering the second one sends the
// message it was part of again, whole, under the webhook-id it was sent
// with: a receiver that drops repeats by webhook-id takes each change
// exactly once, and both pushes complete.
func TestI3_RedeliveryOfAGroupedPushResendsItsMessageUnderTheSameID(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	seen := map[string]bool{} // webhook-ids the receiver has acted on
	taken := map[string]int{} // item id → times the receiver acted on it
	var rv *receiver
	rv = newReceiver(t, func(n int, w http.ResponseWriter) bool {
		h := rv.received()[n-1]
		mu.Lock()
		defer mu.Unlock()
		if seen[h.ID] {
			return true // a repeat: acknowledged, not acted on
		}
		seen[h.ID] = true
		var body struct {
			Items []struct{ ID string } `json:"items"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil {
			t.Error(err)
		}
		for _, it := range body.Items {
			taken[it.ID]++
		}
		if n == 1 {
			dropConnection(t, w) // acted on; herald never hears back
			return false
		}
		return true
	})
	a := r.admit("t-news", "n1@v1", "ops", changed("t-news", "n1", "Library hours changed"), 0)
	b := r.admit("t-news", "n2@v1", "ops", changed("t-news", "n2", "Exam room changed"), 0)
	r.start(webhookRoute(t, rv, false), "w", nil)
	r.settled(a, store.Unknown)
	r.settled(b, store.Unknown)
	if hits := rv.received(); len(hits) != 1 {
		t.Fatalf("%d POSTs, want the two changes in one", len(hits))
	}

	fx, err := r.m.Redeliver(context.Background(), "console:admin", b)
	if err != nil {
		t.Fatal(err)
	}
	if fx.State != store.Pending {
		t.Fatalf("redelivered push is %s, want pending", fx.State)
	}
	r.advance(delivery.RedeliverGather)
	r.settled(a, store.Completed)
	r.settled(b, store.Completed)

	hits := rv.received()
	var again struct {
		Items []struct{ ID string } `json:"items"`
	}
	if len(hits) == 2 {
		_ = json.Unmarshal(hits[1].Body, &again)
	}
	if len(hits) != 2 || hits[1].ID != hits[0].ID || len(again.Items) != 2 {
		t.Fatalf("POSTs under %v; want the message again under its first id %q", ids(hits), hits[0].ID)
	}
	mu.Lock()
	defer mu.Unlock()
	if taken["n1"] != 1 || taken["n2"] != 1 {
		t.Errorf("the receiver acted on %v; want each change once", taken)
	}
}

func ids(hits []hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}
