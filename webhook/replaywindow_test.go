package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// A GitHub-format body accepted once is dropped when it comes again
// within 24 h, however short the store's retention: its claim is kept
// that long after the pushes ended. After that it is a new event.
func TestI1_GitHubReplayDroppedForADayWhateverTheRetention(t *testing.T) {
	ctx := context.Background()
	clock := tasks.NewManualClock(time.Now().Truncate(time.Second))
	ts := newTestServer(t, serverConfig{clock: clock, hooks: []Hook{
		{Name: "gh", Format: "github", Secrets: []string{ghSecret}, Route: []string{"inbox:console:alice"}},
	}})
	body := []byte(`{"action":"opened","pull_request":{"title":"Fix it","html_url":"https://github.com/o/r/pull/1"}}`)
	post := func(id string) bool {
		t.Helper()
		res := ts.do("POST", "/hooks/gh", githubHeaders(ghSecret, id, "pull_request", body), body)
		if res.status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", id, res.status, res.raw)
		}
		return res.body["duplicate"] == true
	}
	// deliverAndPrune delivers the hook's pushes, then lets time pass
	// and prunes on a retention of one minute, the shortest there is.
	deliverAndPrune := func(wait time.Duration) {
		t.Helper()
		l := ts.store.Ledger()
		for _, fx := range ts.claims("gh") {
			if fx.State != store.Pending {
				continue
			}
			if _, err := l.Begin(ctx, fx.Key, "w", fx.Version(), clock.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Settle(ctx, fx.Key, store.Outcome{State: store.Completed}, clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(wait)
		for range 3 {
			if _, err := ts.store.Prune(ctx, clock.Now().Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if post("d-1") {
		t.Fatal("the first delivery was taken for a duplicate")
	}
	deliverAndPrune(2 * time.Minute)
	if !post("d-replayed") {
		t.Error("a replay two minutes later, past a one-minute retention, was accepted as new")
	}
	deliverAndPrune(23 * time.Hour)
	if !post("d-replayed-2") {
		t.Error("a replay 23 hours later was accepted as new")
	}
	deliverAndPrune(time.Hour)
	if post("d-next-day") {
		t.Error("the same body a day later was dropped; past the window it is a new event")
	}
}
