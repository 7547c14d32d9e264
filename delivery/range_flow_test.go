package delivery_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// TestSpec21_RangeRedeliveryDryRunThenOnceEach: of a recipient's pushes,
// three failed and one completed. A dry run lists the three and sends
// nothing; a real run sends each failed push again exactly once, under
// its original webhook-id and with its original body, and never the
// completed one; a push outside --since/--until is left alone.
func TestSpec21_RangeRedeliveryDryRunThenOnceEach(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, answers(http.StatusBadRequest, http.StatusBadRequest, http.StatusBadRequest, http.StatusBadRequest))
	r.start(scheduledRoute(t, rv, time.Second), "w", nil)
	ctx := context.Background()

	var failed []string
	for i := range 4 {
		key := r.admit("hook:ci", "d-"+strconv.Itoa(i), "ops", inbound("deploy "+strconv.Itoa(i)), 0)
		r.settled(key, store.Failed)
		failed = append(failed, key)
		r.clock.Advance(time.Minute)
	}
	done := r.admit("hook:ci", "d-ok", "ops", inbound("deploy ok"), 0)
	r.settled(done, store.Completed)
	before := rv.received()
	fxs, err := r.st.Ledger().List(ctx, "hook:ci", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first failed push was claimed before the range starts.
	q := delivery.Range{Recipient: "ops", Since: t0.Add(30 * time.Second)}

	sel, queued, err := delivery.RedeliverRange(ctx, r.st.Ledger(), fxs, q, "console:admin", r.clock.Now(), true)
	if err != nil || len(sel) != 3 || len(queued) != 0 {
		t.Fatalf("dry run: %d selected, %d queued (%v); want 3 listed, none queued", len(sel), len(queued), err)
	}
	r.advance(time.Minute)
	if got := len(rv.received()); got != len(before) {
		t.Fatalf("a dry run sent %d requests", got-len(before))
	}

	// The effects listed twice: still queued once each.
	sel, queued, err = delivery.RedeliverRange(ctx, r.st.Ledger(), append(fxs, fxs...), q, "console:admin", r.clock.Now(), false)
	if err != nil || len(sel) != 6 || len(queued) != 3 {
		t.Fatalf("real run: %d selected, %d queued (%v); want 3 queued", len(sel), len(queued), err)
	}
	for _, k := range failed[1:] {
		r.settled(k, store.Completed)
	}
	r.advance(time.Hour)
	bodies := map[string][]byte{}
	for _, h := range before {
		bodies[h.ID] = h.Body
	}
	count := map[string]int{}
	for _, h := range rv.received()[len(before):] {
		count[h.ID]++
		if string(h.Body) != string(bodies[h.ID]) {
			t.Errorf("%s sent again with body %s, want the original %s", h.ID, h.Body, bodies[h.ID])
		}
	}
	if len(count) != 3 || count[done] != 0 || count[failed[0]] != 0 {
		t.Errorf("sent again: %v; want each of %v once", count, failed[1:])
	}
	for _, k := range failed[1:] {
		if count[k] != 1 {
			t.Errorf("%s sent again %d times, want once", k, count[k])
		}
	}
	if fx := r.effect(failed[0]); fx.State != store.Failed {
		t.Errorf("the push before --since is %s, want failed as it was", fx.State)
	}
}
