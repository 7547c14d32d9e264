package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// TestI3_RestartWith500QueuedDeliversEachOnce: 500 claimed pushes wait in
// the queue when the process dies; after a restart a new dispatcher
// delivers every one exactly once, each under its own webhook-id.
func TestI3_RestartWith500QueuedDeliversEachOnce(t *testing.T) {
	const n = 500
	r := newRig(t)
	rv := newReceiver(t, nil)

	keys := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			keys[i] = r.admit("hook:ci", fmt.Sprintf("delivery-%03d", i), "ops", inbound(fmt.Sprintf("build %d", i)), 0)
		}()
	}
	wg.Wait()
	if len(rv.received()) != 0 {
		t.Fatal("something was sent before the restart")
	}
	r.crash()

	r.open()
	if rec, err := r.st.Ledger().Recover(context.Background(), store.Recovery{}, r.clock.Now()); err != nil || len(rec) != 0 {
		t.Fatalf("recover after the restart: %v, %d interrupted (want none: nothing was in flight)", err, len(rec))
	}
	r.start(webhookRoute(t, rv, false), "replica-b", func(o *delivery.Options) { o.Workers = 16 })
	for _, k := range keys {
		fx := r.settled(k, store.Completed)
		if len(fx.Attempts) != 1 {
			t.Errorf("effect %s: %d attempts, want 1", k, len(fx.Attempts))
		}
	}
	r.advance(time.Minute) // the dispatcher looks again: nothing is left to send

	seen := map[string]int{}
	for _, h := range rv.received() {
		seen[h.ID]++
		var body struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil || body.ID != h.ID || body.Type != delivery.KindInbound {
			t.Errorf("body of %s: type %q id %q (%v)", h.ID, body.Type, body.ID, err)
		}
	}
	if len(seen) != n {
		t.Errorf("receiver saw %d distinct webhook-ids, want %d", len(seen), n)
	}
	for _, k := range keys {
		if seen[k] != 1 {
			t.Errorf("webhook-id %s arrived %d times, want once", k, seen[k])
		}
	}
}

// TestI3_RetryAfterHonoured: a 429 with Retry-After: 2 provably did not
// deliver; the push waits durably for two seconds of the dispatcher's
// clock, not one less, and is then delivered once.
func TestI3_RetryAfterHonoured(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, tooManyRequests("2", 1))
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	r.start(webhookRoute(t, rv, false), "w", nil)

	waitFor(t, func() bool {
		fx := r.effect(key)
		return len(fx.Attempts) == 1 && !fx.InFlight
	}, "the first attempt to be recorded")
	fx := r.effect(key)
	if fx.State != store.Pending || !fx.NotBefore.Equal(t0.Add(2*time.Second)) || fx.Attempts[0].Error != "rate_limited" {
		t.Fatalf("after 429: state %s not_before %s error %q; want pending until %s, rate_limited",
			fx.State, fx.NotBefore, fx.Attempts[0].Error, t0.Add(2*time.Second))
	}

	r.advance(time.Second)
	if got := len(rv.received()); got != 1 {
		t.Fatalf("after 1 s the receiver has %d requests, want 1 (the wait is 2 s)", got)
	}
	r.advance(time.Second)
	fx = r.settled(key, store.Completed)
	if len(fx.Attempts) != 2 || !fx.Attempts[1].Start.Equal(t0.Add(2*time.Second)) {
		t.Errorf("attempts %+v; want the second one started at %s", fx.Attempts, t0.Add(2*time.Second))
	}
	r.advance(time.Minute)
	if hits := rv.received(); len(hits) != 2 || hits[0].ID != key || hits[1].ID != key {
		t.Errorf("receiver saw %d requests, want the 429 and one delivery of %s", len(hits), key)
	}
}

// TestI3_UnknownIsNeverReplayed: the receiver read the whole request and
// dropped the connection. It may have acted on it, so the push ends
// unknown and is not sent again, however long the dispatcher runs.
func TestI3_UnknownIsNeverReplayed(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool { dropConnection(t, w); return false })
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	r.start(webhookRoute(t, rv, false), "w", nil)

	fx := r.settled(key, store.Unknown)
	if len(fx.Attempts) != 1 || fx.Error != "connection_lost" {
		t.Errorf("attempts %d error %q, want 1 attempt, connection_lost", len(fx.Attempts), fx.Error)
	}
	for range 3 {
		r.advance(time.Hour)
	}
	if got := len(rv.received()); got != 1 {
		t.Errorf("receiver saw %d requests, want 1: unknown is never replayed", got)
	}
}

// TestI3_IdempotentWebhookRetriesUnknownWithSameID: a recipient
// declared idempotent deduplicates by webhook-id, so an unknown outcome
// is retried automatically, always under the same id, on its retry
// schedule (SPEC §21), and ends failed (retries_exhausted) after the
// last retry.
func TestI3_IdempotentWebhookRetriesUnknownWithSameID(t *testing.T) {
	schedule := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	r := newRig(t)
	rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool { dropConnection(t, w); return false })
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 0)
	r.start(scheduledRoute(t, rv, schedule...), "w", nil)

	at := t0
	for i, wait := range schedule {
		waitFor(t, func() bool {
			fx := r.effect(key)
			return len(fx.Attempts) == i+1 && !fx.InFlight
		}, "attempt %d to be recorded", i+1)
		fx := r.effect(key)
		if fx.State != store.Pending || !fx.NotBefore.Equal(at.Add(wait)) {
			t.Fatalf("after attempt %d: state %s, next at %s; want pending, next at %s", i+1, fx.State, fx.NotBefore, at.Add(wait))
		}
		if !fx.Attempts[i].Start.Equal(at) {
			t.Errorf("attempt %d started at %s, want %s", i+1, fx.Attempts[i].Start, at)
		}
		r.advance(wait - time.Millisecond) // not a moment early
		if got := len(rv.received()); got != i+1 {
			t.Fatalf("%d requests before the wait of %s ended, want %d", got, wait, i+1)
		}
		r.clock.Advance(time.Millisecond)
		at = at.Add(wait)
	}
	fx := r.settled(key, store.Failed)
	if len(fx.Attempts) != len(schedule)+1 || fx.Error != delivery.ReasonRetriesExhausted {
		t.Errorf("%d attempts, error %q; want %d, %s", len(fx.Attempts), fx.Error, len(schedule)+1, delivery.ReasonRetriesExhausted)
	}
	r.advance(time.Hour)
	hits := rv.received()
	if len(hits) != len(schedule)+1 {
		t.Errorf("receiver saw %d requests, want %d", len(hits), len(schedule)+1)
	}
	for _, h := range hits {
		if h.ID != key {
			t.Errorf("replay under webhook-id %q, want %q every time", h.ID, key)
		}
	}
}

// TestI3_IdempotentReplayNeverOutlivesExpiry: a replay that would land
// after the push expires is not scheduled; the push ends unknown, not
// failed, because the attempt may have arrived.
func TestI3_IdempotentReplayNeverOutlivesExpiry(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool { dropConnection(t, w); return false })
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), 1500*time.Millisecond)
	r.start(scheduledRoute(t, rv, time.Second, 2*time.Second), "w", nil)

	waitFor(t, func() bool { return len(r.effect(key).Attempts) == 1 && !r.effect(key).InFlight }, "the first attempt")
	r.advance(time.Second)
	fx := r.settled(key, store.Unknown)
	if len(fx.Attempts) != 2 {
		t.Errorf("%d attempts, want 2 (the third would be after expiry)", len(fx.Attempts))
	}
	r.advance(time.Hour)
	if got := len(rv.received()); got != 2 {
		t.Errorf("receiver saw %d requests, want 2", got)
	}
}

// TestExpiredPushIsNeverSent: a push whose ExpiresAt has passed when the
// dispatcher reaches it ends failed "expired" with no attempt.
func TestExpiredPushIsNeverSent(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	key := r.admit("hook:ci", "d-1", "ops", inbound("deploy"), time.Minute)
	r.clock.Advance(time.Minute)
	r.start(webhookRoute(t, rv, false), "w", nil)

	fx := r.settled(key, store.Failed)
	if fx.Error != "expired" || len(fx.Attempts) != 0 {
		t.Errorf("error %q, %d attempts; want expired, none", fx.Error, len(fx.Attempts))
	}
	r.advance(time.Hour)
	if got := len(rv.received()); got != 0 {
		t.Errorf("receiver saw %d requests, want none", got)
	}
}

// TestDeadlineReminderExpiresAtDueTime: a reminder whose provider asks for
// a wait beyond the due time comes back at the due time and ends failed
// "expired" then, never sent after the deadline.
func TestDeadlineReminderExpiresAtDueTime(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, tooManyRequests("7200", -1))
	due := t0.Add(time.Hour)
	key := r.commitReminder("hw", "hw-4", "ops", due)
	r.start(webhookRoute(t, rv, false), "w", nil)

	waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt")
	if fx := r.effect(key); !fx.NotBefore.Equal(due) {
		t.Fatalf("retry at %s, want the due time %s", fx.NotBefore, due)
	}
	r.advance(time.Hour - time.Second)
	if fx := r.effect(key); fx.State != store.Pending {
		t.Fatalf("a second before the due time: %s, want still pending", fx.State)
	}
	r.advance(time.Second)
	fx := r.settled(key, store.Failed)
	if fx.Error != "expired" || !fx.UpdatedAt.Equal(due) || len(fx.Attempts) != 1 {
		t.Errorf("error %q at %s with %d attempts; want expired at %s after 1 attempt", fx.Error, fx.UpdatedAt, len(fx.Attempts), due)
	}
	r.advance(time.Hour)
	if got := len(rv.received()); got != 1 {
		t.Errorf("receiver saw %d requests, want 1", got)
	}
}

// commitReminder claims a deadline reminder the way a task run does: the
// push expires at the item's due time.
func (r *rig) commitReminder(taskID, itemID, recipient string, due time.Time) string {
	r.t.Helper()
	now := r.clock.Now()
	msg := delivery.Message{Kind: delivery.KindDeadline, TaskID: taskID, TaskName: "Homework", OccurredAt: now,
		Items: []delivery.Item{{ID: itemID, Title: "Homework " + itemID, Change: delivery.ChangeDeadline, Due: due}}}
	payload, err := json.Marshal(msg)
	if err != nil {
		r.t.Fatal(err)
	}
	key := fmt.Sprintf("fx_%s_%s_%d", taskID, itemID, due.Unix())
	res, err := r.st.Ledger().Commit(context.Background(), store.RunCommit{TaskID: taskID, Effects: []store.Effect{{
		Key: key, TaskID: taskID, Recipient: recipient, Kind: delivery.KindDeadline, Payload: payload,
		NotBefore: now, ExpiresAt: due, CreatedAt: now, RunID: taskID + "/run-1",
	}}})
	if err != nil || len(res.Claimed) != 1 {
		r.t.Fatalf("commit reminder: %v %+v", err, res)
	}
	r.wakeDispatcher()
	return key
}

// TestI3_IdempotentGroupReplaysWhole: changes of one run go out as one
// message under the first effect's key. A replay keeps the whole group,
// so the receiver always sees that one webhook-id; when any member can
// no longer be replayed (its expiry comes first), the group ends unknown
// together rather than going out again under another id.
func TestI3_IdempotentGroupReplaysWhole(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, func(_ int, w http.ResponseWriter) bool { dropConnection(t, w); return false })
	now := r.clock.Now()
	var fxs []store.Effect
	for i, ttl := range []time.Duration{1500 * time.Millisecond, 24 * time.Hour} {
		msg := changed("t-news", fmt.Sprintf("n%d", i), fmt.Sprintf("Notice %d", i))
		msg.OccurredAt = now
		payload, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		fxs = append(fxs, store.Effect{Key: fmt.Sprintf("fx_group_%d", i), TaskID: "t-news", Recipient: "ops",
			Kind: delivery.KindChanged, Payload: payload, NotBefore: now, ExpiresAt: now.Add(ttl), CreatedAt: now})
	}
	if _, err := r.st.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "t-news", Effects: fxs}); err != nil {
		t.Fatal(err)
	}
	r.start(scheduledRoute(t, rv, time.Second, 2*time.Second), "w", nil)

	waitFor(t, func() bool { fx := r.effect(fxs[1].Key); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt")
	r.advance(time.Second)
	for _, fx := range fxs {
		if got := r.settled(fx.Key, store.Unknown); len(got.Attempts) != 2 {
			t.Errorf("%s: %d attempts, want 2", fx.Key, len(got.Attempts))
		}
	}
	r.advance(time.Hour)
	hits := rv.received()
	if len(hits) != 2 {
		t.Fatalf("receiver saw %d requests, want 2", len(hits))
	}
	for _, h := range hits {
		var body struct {
			Items []struct{ ID string } `json:"items"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil || h.ID != fxs[0].Key || len(body.Items) != 2 {
			t.Errorf("request under %q with %d items (%v); want %q with both items", h.ID, len(body.Items), err, fxs[0].Key)
		}
	}
}

// TestWebhookPostCarriesOneType: a run's news and a due reminder for the
// same webhook recipient go out as two POSTs, a watch.deadline one with
// the reminder alone and a watch.changed one with the news alone, each
// under its own webhook-id; a receiver routing on type sees both.
func TestWebhookPostCarriesOneType(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	now := r.clock.Now()
	news := changed("t-hw", "hw-1", "Homework 1")
	news.OccurredAt = now
	remind := delivery.Message{Kind: delivery.KindDeadline, TaskID: "t-hw", TaskName: "Homework", OccurredAt: now,
		Items: []delivery.Item{{ID: "hw-0", Title: "Homework 0", Change: delivery.ChangeDeadline, Due: now.Add(3 * time.Hour)}}}
	var fxs []store.Effect
	for i, m := range []delivery.Message{news, remind} {
		payload, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		fxs = append(fxs, store.Effect{Key: fmt.Sprintf("fx_run_%d", i), TaskID: "t-hw", Recipient: "ops", Kind: m.Kind,
			Payload: payload, NotBefore: now, ExpiresAt: now.Add(3 * time.Hour), CreatedAt: now, RunID: "t-hw/run-1"})
	}
	if _, err := r.st.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "t-hw", Effects: fxs}); err != nil {
		t.Fatal(err)
	}
	r.start(webhookRoute(t, rv, false), "w", nil)
	for _, fx := range fxs {
		r.settled(fx.Key, store.Completed)
	}
	hits := rv.received()
	if len(hits) != 2 {
		t.Fatalf("receiver saw %d POSTs, want 2 (one per type)", len(hits))
	}
	want := map[string]string{"watch.deadline": "deadline", "watch.changed": "changed"}
	ids := map[string]bool{}
	for _, h := range hits {
		var body struct {
			Type  string `json:"type"`
			Items []struct {
				ID     string `json:"id"`
				Change string `json:"change"`
			} `json:"items"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Items) != 1 || body.Items[0].Change != want[body.Type] {
			t.Errorf("a %q POST carries %+v; want one %q item", body.Type, body.Items, want[body.Type])
		}
		delete(want, body.Type)
		ids[h.ID] = true
	}
	if len(want) != 0 || len(ids) != 2 {
		t.Errorf("types not seen: %v; webhook-ids %v", want, ids)
	}
}
