package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
)

// TestOrder_RetriedNewsArrivesBeforeItsLaterChange: the receiver refuses
// "new X" with 429 and Retry-After; "changed X", claimed while it waits,
// is not sent ahead of it: the receiver gets new X, then changed X.
func TestOrder_RetriedNewsArrivesBeforeItsLaterChange(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, tooManyRequests("30", 1))
	r.start(webhookRoute(t, rv, false), "w", nil)
	first := r.admit("t-news", "x@new", "ops", notice(item("x", "Exam announced", delivery.ChangeNew, "")), 0)
	waitFor(t, func() bool { fx := r.effect(first); return len(fx.Attempts) == 1 && !fx.InFlight }, "the refused first attempt")

	r.advance(5 * time.Second)
	second := r.admit("t-news", "x@changed", "ops", notice(item("x", "Exam moved", delivery.ChangeChanged, "Exam announced")), 0)
	r.advance(time.Second)
	if fx := r.effect(second); len(fx.Attempts) != 0 {
		t.Fatalf("the later change was attempted while the news before it waited to be retried: %+v", fx.Attempts)
	}
	r.advance(30 * time.Second)
	r.settled(first, store.Completed)
	r.settled(second, store.Completed)

	var got []string
	for _, h := range rv.received()[1:] {
		var body struct {
			Items []struct{ Change, Title string } `json:"items"`
		}
		if err := json.Unmarshal(h.Body, &body); err != nil {
			t.Fatal(err)
		}
		for _, it := range body.Items {
			got = append(got, it.Change+" "+it.Title)
		}
	}
	if strings.Join(got, "|") != "new Exam announced|changed Exam moved" {
		t.Errorf("the receiver was told %q; want the news, then the change", got)
	}
}

// TestOrder_UrgentReminderTakesTheHeldNewsOfItsTaskAlong: quiet hours
// hold "new: Essay"; a reminder for the essay due within the urgent window
// goes out at once, and so must not arrive before the news of the essay:
// the news goes with it, in the same message.
func TestOrder_UrgentReminderTakesTheHeldNewsOfItsTaskAlong(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	msg := notice(item("essay", "Essay posted", delivery.ChangeNew, ""))
	msg.TaskID = "t-hw"
	news := r.admit("t-hw", "essay@new", chat, msg, 0)
	waitFor(t, func() bool { return r.effect(news).NotBefore.Equal(nextMorning) }, "the news to be held")

	r.advance(10 * time.Minute)
	remind := r.commitReminder("t-hw", "essay", chat, r.clock.Now().Add(90*time.Minute))
	r.settled(remind, store.Completed)
	if fx := r.settled(news, store.Completed); !fx.Attempts[0].Start.Equal(r.clock.Now()) {
		t.Errorf("the news went at %s, want with the reminder at %s", fx.Attempts[0].Start, r.clock.Now())
	}
	sent := api.sent()
	if len(sent) != 1 || !strings.Contains(sent[0], "Essay posted") || !strings.Contains(sent[0], "Homework essay") {
		t.Errorf("Telegram received %q; want one message with the news and the reminder", sent)
	}
}

// TestOrder_ReleasedChangeWaitsForTheNewsBeforeIt: "new X" is refused
// with 429 and waits a minute to be retried; "changed X" comes while the
// chat has the task muted (or is in quiet hours) and is held. Lifting the
// mute (or the quiet hours) releases the change at once, yet it still
// arrives after the news, whichever path released it.
func TestOrder_ReleasedChangeWaitsForTheNewsBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hold, off func(*chatprefs.Prefs)
	}{
		{"mute off",
			func(p *chatprefs.Prefs) { p.Mutes = map[string]time.Time{"t-news": t0.Add(time.Hour)} },
			func(p *chatprefs.Prefs) { delete(p.Mutes, "t-news") }},
		{"quiet off",
			func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" },
			func(p *chatprefs.Prefs) { p.Quiet = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			api := newFakeBotAPI(t)
			api.send = refuseFirst(60)
			r.start(telegramRoute(t, api.URL), "w", withHolds(r.releasingPrefs()))
			news := r.admit("t-news", "x@new", chat, notice(item("x", "Exam announced", delivery.ChangeNew, "")), 0)
			waitFor(t, func() bool { fx := r.effect(news); return len(fx.Attempts) == 1 && !fx.InFlight }, "the refused first attempt")

			r.advance(5 * time.Second)
			r.setPrefs(chat, tc.hold)
			r.advance(5 * time.Second)
			change := r.admit("t-news", "x@changed", chat, notice(item("x", "Exam moved", delivery.ChangeChanged, "Exam announced")), 0)
			waitFor(t, func() bool { return r.effect(change).NotBefore.After(r.clock.Now()) }, "the change to be held")

			r.advance(10 * time.Second)
			if err := r.releasingPrefs().Update(context.Background(), chat, tc.off); err != nil {
				t.Fatal(err)
			}
			r.advance(time.Second)
			if fx := r.effect(change); len(fx.Attempts) != 0 {
				t.Fatalf("the released change was sent while the news before it waited: %+v", fx.Attempts)
			}
			r.advance(time.Minute)
			r.settled(news, store.Completed)
			r.settled(change, store.Completed)
			sent := api.sent()
			if len(sent) != 3 || !strings.Contains(sent[1], "Exam announced") || !strings.Contains(sent[2], "Exam moved") {
				t.Errorf("Telegram received %q; want the refused news, the news, then the change", sent)
			}
		})
	}
}

// TestOrder_UrgentReminderDoesNotWaitOutQuietHoursBehindARetriedPush: the
// news of the essay was refused with 429 and, when its retry came, quiet
// hours held it. An urgent reminder for the essay cannot go in the same
// message (the news was attempted already), and it does not wait until
// morning behind it either: it goes now, before its deadline.
func TestOrder_UrgentReminderDoesNotWaitOutQuietHoursBehindARetriedPush(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	api.send = refuseFirst(60)
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	msg := notice(item("essay", "Essay posted", delivery.ChangeNew, ""))
	msg.TaskID = "t-hw"
	news := r.admit("t-hw", "essay@new", chat, msg, 0)
	waitFor(t, func() bool { fx := r.effect(news); return len(fx.Attempts) == 1 && !fx.InFlight }, "the refused first attempt")
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	r.advance(time.Minute)
	waitFor(t, func() bool { return r.effect(news).NotBefore.Equal(nextMorning) }, "the retried news to be held")

	remind := r.commitReminder("t-hw", "essay", chat, r.clock.Now().Add(90*time.Minute))
	if fx := r.settled(remind, store.Completed); !fx.Attempts[0].Start.Equal(r.clock.Now()) {
		t.Errorf("the urgent reminder went at %s, want at once (%s)", fx.Attempts[0].Start, r.clock.Now())
	}
}

// TestOrder_ChangeWaitsWhileAnotherReplicaSendsTheNewsBeforeIt: another
// replica has "new X" on the wire; this one does not send "changed X"
// meanwhile, and sends it once the news has ended.
func TestOrder_ChangeWaitsWhileAnotherReplicaSendsTheNewsBeforeIt(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	news := r.admit("t-news", "x@new", "ops", notice(item("x", "Exam announced", delivery.ChangeNew, "")), 0)
	if _, err := r.st.Ledger().Begin(context.Background(), news, "replica-b", 0, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	change := r.admit("t-news", "x@changed", "ops", notice(item("x", "Exam moved", delivery.ChangeChanged, "Exam announced")), 0)
	r.start(webhookRoute(t, rv, false), "w", nil)
	waitFor(t, func() bool { return r.effect(change).NotBefore.After(r.clock.Now()) }, "the change to wait")
	if fx := r.effect(change); len(fx.Attempts) != 0 || len(rv.received()) != 0 {
		t.Fatalf("the change was sent while the news before it was on the wire: %+v", fx.Attempts)
	}
	if _, err := r.st.Ledger().Settle(context.Background(), news, store.Outcome{State: store.Completed}, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second)
	r.settled(change, store.Completed)
}

// TestI1_I3_CrashBetweenAMessagesSettlesSendsNoPartOfItAgain: two news
// items go out as one message under the first push's key; the process
// dies after the receiver's answer was recorded on the first push and
// before it was recorded on the second. Recovery queues the second again
// (the receiver drops repeats by key). Sent alone it would go under its
// own key, and its item would arrive twice: it ends as its message did,
// or, when the message is to be retried, goes again with it, whole.
func TestI1_I3_CrashBetweenAMessagesSettlesSendsNoPartOfItAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     store.Outcome
		want      store.EffectState
		wait      time.Duration
		wantSends int
	}{
		{"delivered", store.Outcome{State: store.Completed, PartsSent: 1}, store.Completed, 0, 0},
		{"refused for good", store.Outcome{State: store.Failed, Error: "http_400"}, store.Failed, 0, 0},
		{"to be retried", store.Outcome{State: store.Pending, RetryAt: t0.Add(30 * time.Second), Error: "http_429"}, store.Completed, 30 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			rv := newReceiver(t, nil)
			ctx := context.Background()
			now := r.clock.Now()
			var keys []string
			var fxs []store.Effect
			for i := range 2 {
				msg := changed("t-news", fmt.Sprintf("n%d", i), fmt.Sprintf("Notice %d", i))
				msg.OccurredAt = now
				payload, err := json.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				key := fmt.Sprintf("fx_msg_%d", i)
				keys = append(keys, key)
				fxs = append(fxs, store.Effect{Key: key, TaskID: "t-news", Recipient: "ops", Kind: delivery.KindChanged,
					Payload: payload, NotBefore: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now})
			}
			l := r.st.Ledger()
			if _, err := l.Commit(ctx, store.RunCommit{TaskID: "t-news", Effects: fxs}); err != nil {
				t.Fatal(err)
			}
			// What a dying worker left: both begun as one message and
			// recorded as sending, the outcome settled on the first only.
			if err := l.Sending(ctx, "w-dead", nil); err != nil {
				t.Fatal(err)
			}
			var refs []store.AttemptRef
			for _, k := range keys {
				if _, err := l.Begin(ctx, k, "w-dead", 0, now); err != nil {
					t.Fatal(err)
				}
				refs = append(refs, store.AttemptRef{Key: k, N: 1})
			}
			if err := l.Sending(ctx, "w-dead", refs); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Settle(ctx, keys[0], tc.first, now); err != nil {
				t.Fatal(err)
			}
			got, err := l.Recover(ctx, store.Recovery{Replay: func(store.Effect) bool { return true }}, now)
			if err != nil || len(got) != 1 || got[0].Key != keys[1] || got[0].State != store.Pending {
				t.Fatalf("recovered %+v (%v); want the second push queued again", got, err)
			}

			r.start(webhookRoute(t, rv, true), "w", nil)
			r.advance(time.Second)
			r.advance(tc.wait)
			for _, k := range keys {
				r.settled(k, tc.want)
			}
			hits := rv.received()
			if len(hits) != tc.wantSends {
				t.Fatalf("the receiver saw %d requests (%v), want %d", len(hits), ids(hits), tc.wantSends)
			}
			for _, h := range hits {
				var body struct {
					Items []struct{ ID string } `json:"items"`
				}
				if err := json.Unmarshal(h.Body, &body); err != nil || h.ID != keys[0] || len(body.Items) != 2 {
					t.Errorf("request under %q with %d items (%v); want the message again under %q", h.ID, len(body.Items), err, keys[0])
				}
			}
			// A redelivery of the push ended as its message did still
			// finds the whole message, not the attempt that ended it.
			if _, n, err := delivery.Redeliver(ctx, l, keys[1], "console:admin", r.clock.Now()); err != nil || n != 2 {
				t.Errorf("redelivery of %s queued %d pushes (%v), want its whole message: 2", keys[1], n, err)
			}
		})
	}
}
