package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store"
)

const chat = "telegram:chat:42"

// prefs is the real chatprefs.Store on the rig's channel-state object.
func (r *rig) prefs() *chatprefs.Store {
	return &chatprefs.Store{KV: r.st.Channels(), Zone: time.UTC}
}

func (r *rig) setPrefs(address string, fn func(*chatprefs.Prefs)) {
	r.t.Helper()
	if err := r.prefs().Update(context.Background(), address, fn); err != nil {
		r.t.Fatal(err)
	}
}

// withHolds holds pushes as the chats' prefs in ps say (as serve wires it).
func withHolds(ps *chatprefs.Store) func(*delivery.Options) {
	return func(o *delivery.Options) { o.Holds = delivery.PrefHolds{Prefs: ps} }
}

// nextMorning is 07:00 after t0 (23:00), when 22:00-07:00 quiet hours end.
var nextMorning = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)

// TestQuietHoursHoldDurablyThenDeliverOnce: a push during quiet hours is
// held by moving its NotBefore (no attempt recorded), survives a restart
// held, and is delivered once when the quiet hours end.
func TestQuietHoursHoldDurablyThenDeliverOnce(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	key := r.admit("hook:ci", "d-1", chat, inbound("deploy"), 0)
	stop := r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))

	waitFor(t, func() bool { return r.effect(key).NotBefore.Equal(nextMorning) }, "the push to be held until 07:00")
	if fx := r.effect(key); fx.State != store.Pending || len(fx.Attempts) != 0 {
		t.Fatalf("held push: state %s with %d attempts; want pending with none", fx.State, len(fx.Attempts))
	}
	stop()
	r.crash()

	r.open()
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	r.advance(nextMorning.Sub(t0) - time.Minute)
	if got := len(api.sent()); got != 0 {
		t.Fatalf("%d messages during quiet hours, want none", got)
	}
	r.advance(time.Minute)
	fx := r.settled(key, store.Completed)
	if len(fx.Attempts) != 1 || !fx.Attempts[0].Start.Equal(nextMorning) {
		t.Errorf("attempts %+v; want one, at 07:00", fx.Attempts)
	}
	r.advance(time.Hour)
	if got := len(api.sent()); got != 1 {
		t.Errorf("%d messages after quiet hours, want 1", got)
	}
}

// TestMuteHoldsOneTaskUntilTheMuteEnds: /mute defers one task's pushes
// to the chat, durably and once; other tasks still go out.
func TestMuteHoldsOneTaskUntilTheMuteEnds(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	until := t0.Add(30 * time.Minute)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Mutes = map[string]time.Time{"t-news": until} })
	muted := r.admit("t-news", "n1@v1", chat, changed("t-news", "n1", "Library hours changed"), 0)
	other := r.admit("t-grades", "g1@v1", chat, changed("t-grades", "g1", "Grades posted"), 0)
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))

	r.settled(other, store.Completed)
	waitFor(t, func() bool { return r.effect(muted).NotBefore.Equal(until) }, "the muted push to be held")
	if fx := r.effect(muted); len(fx.Attempts) != 0 {
		t.Fatalf("muted push has %d attempts, want none", len(fx.Attempts))
	}
	r.advance(29 * time.Minute)
	if got := len(api.sent()); got != 1 {
		t.Fatalf("%d messages while muted, want only the other task's", got)
	}
	r.advance(time.Minute)
	r.settled(muted, store.Completed)
	r.advance(time.Hour)
	if got := len(api.sent()); got != 2 {
		t.Errorf("%d messages, want 2", got)
	}
}

// TestQuietHoursLetUrgentDeadlinesThrough: a reminder due within 2 h is
// sent during quiet hours; one due later is held only until it is 2 h
// from due, never past its deadline.
func TestQuietHoursLetUrgentDeadlinesThrough(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	urgent := r.commitReminder("hw-cs", "hw-4", chat, t0.Add(90*time.Minute))
	later := r.commitReminder("hw-math", "ps-9", chat, t0.Add(5*time.Hour))
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))

	fx := r.settled(urgent, store.Completed)
	if !fx.Attempts[0].Start.Equal(t0) {
		t.Errorf("urgent reminder sent at %s, want at once (%s)", fx.Attempts[0].Start, t0)
	}
	wake := t0.Add(3 * time.Hour) // 02:00: due 04:00 minus the urgent window
	waitFor(t, func() bool { return r.effect(later).NotBefore.Equal(wake) }, "the later reminder to be held until 02:00")
	r.advance(3*time.Hour - time.Second)
	if got := len(api.sent()); got != 1 {
		t.Fatalf("%d messages before 02:00, want only the urgent one", got)
	}
	r.advance(time.Second)
	fx = r.settled(later, store.Completed)
	if len(fx.Attempts) != 1 || !fx.Attempts[0].Start.Equal(wake) {
		t.Errorf("later reminder attempts %+v; want one at %s", fx.Attempts, wake)
	}
}

// heldChanges holds one item changing A→B→C during quiet hours, then lets
// the quiet hours end; it returns the three effect keys, oldest first.
func heldChanges(t *testing.T, r *rig, api *fakeBotAPI) []string {
	t.Helper()
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	var keys []string
	for i, room := range []string{"A101", "B202", "C303"} {
		if i > 0 {
			r.advance(10 * time.Minute)
		}
		k := r.admit("t-news", "exam@"+room, chat, changed("t-news", "exam", "Exam moved to room "+room), 0)
		waitFor(t, func() bool { return r.effect(k).NotBefore.Equal(nextMorning) }, "change %s to be held", room)
		keys = append(keys, k)
	}
	r.advance(time.Minute) // the worker that held C is done with it
	if got := len(api.sent()); got != 0 {
		t.Fatalf("%d messages during quiet hours, want none", got)
	}
	r.advance(nextMorning.Sub(r.clock.Now()))
	return keys
}

// saysOnlyLatest reports whether a Telegram message carries the final
// state of the held item (C303) and none of the superseded ones.
func saysOnlyLatest(text string) bool {
	return strings.Contains(text, "C303") && !strings.Contains(text, "A101") && !strings.Contains(text, "B202")
}

// TestI3_HeldChangesCollapseAndShareTheirMessageOutcome: one item changing
// A→B→C while held goes out as one message saying C, and the superseded
// pushes end exactly as that message did: completed only when it was
// delivered, failed or unknown with it otherwise, never completed ahead
// of it. Each one records its own attempt, begun with the message (I1),
// and an unknown outcome is not replayed.
func TestI3_HeldChangesCollapseAndShareTheirMessageOutcome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, w http.ResponseWriter) bool
		state  store.EffectState
		reason string
	}{
		{name: "delivered", state: store.Completed},
		{name: "rejected", state: store.Failed, reason: "bad_request",
			answer: func(_ *testing.T, w http.ResponseWriter) bool {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities"}`)
				return false
			}},
		{name: "gateway timeout", state: store.Unknown, reason: "http_504",
			answer: func(_ *testing.T, w http.ResponseWriter) bool {
				w.WriteHeader(http.StatusGatewayTimeout)
				fmt.Fprint(w, `{"ok":false,"error_code":504,"description":"Gateway Timeout"}`)
				return false
			}},
		{name: "answer lost", state: store.Unknown,
			answer: func(t *testing.T, w http.ResponseWriter) bool {
				dropConnection(t, w)
				return false
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			api := newFakeBotAPI(t)
			if tc.answer != nil {
				api.send = func(_ int, w http.ResponseWriter) bool { return tc.answer(t, w) }
			}
			keys := heldChanges(t, r, api)

			carrier := r.settled(keys[2], tc.state)
			for _, k := range keys {
				fx := r.settled(k, tc.state)
				if len(fx.Attempts) != 1 || !fx.Attempts[0].Start.Equal(nextMorning) {
					t.Errorf("effect %s: attempts %+v; want one, begun with the message at %s", k, fx.Attempts, nextMorning)
				}
				if fx.Error != carrier.Error || fx.ProviderID != carrier.ProviderID {
					t.Errorf("effect %s ended (%q, %q); want the carrying message's (%q, %q)",
						k, fx.Error, fx.ProviderID, carrier.Error, carrier.ProviderID)
				}
			}
			if tc.reason != "" && carrier.Error != tc.reason {
				t.Errorf("outcome reason %q, want %q", carrier.Error, tc.reason)
			}
			if tc.state == store.Completed && carrier.ProviderID != "101" {
				t.Errorf("provider id %q, want Telegram's message id 101", carrier.ProviderID)
			}
			r.advance(time.Hour)
			sent := api.sent()
			if len(sent) != 1 {
				t.Fatalf("%d messages, want exactly 1", len(sent))
			}
			if !saysOnlyLatest(sent[0]) {
				t.Errorf("the message says %q; want only the latest state, C303", sent[0])
			}
		})
	}
}

// TestI3_HeldChangesCollapsedRetryTogether: when Telegram refuses the
// collapsed message with 429 (provably not sent), every push it carries
// waits for the retry with it, none reads as delivered meanwhile, and the
// retry is the same one message saying C.
func TestI3_HeldChangesCollapsedRetryTogether(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	api.send = refuseFirst(3)
	keys := heldChanges(t, r, api)

	retry := nextMorning.Add(3 * time.Second)
	for _, k := range keys {
		waitFor(t, func() bool { fx := r.effect(k); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt at %s", k)
		if fx := r.effect(k); fx.State != store.Pending || !fx.NotBefore.Equal(retry) {
			t.Fatalf("effect %s after 429: %s until %s; want pending until %s", k, fx.State, fx.NotBefore, retry)
		}
	}
	r.advance(3 * time.Second)
	for _, k := range keys {
		fx := r.settled(k, store.Completed)
		if len(fx.Attempts) != 2 || !fx.Attempts[1].Start.Equal(retry) || fx.ProviderID != "102" {
			t.Errorf("effect %s: attempts %+v, provider id %q; want the second at %s, message 102", k, fx.Attempts, fx.ProviderID, retry)
		}
	}
	r.advance(time.Hour)
	sent := api.sent()
	if len(sent) != 2 {
		t.Fatalf("%d sendMessage calls, want 2: the refused one and its retry", len(sent))
	}
	for i, text := range sent {
		if !saysOnlyLatest(text) {
			t.Errorf("call %d says %q; want only the latest state, C303", i+1, text)
		}
	}
}

// changed is a one-item change notice of a task.
func changed(taskID, itemID, title string) delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskID: taskID, TaskName: taskID,
		Items: []delivery.Item{{ID: itemID, Title: title, URL: "https://news.example.edu/" + itemID, Change: delivery.ChangeChanged}}}
}

// A named recipient that points at a chat (recipients.<name>.address) is
// held by that chat's /quiet and /mute, like pushes addressed to the chat.
func TestQuietHoursHoldANamedRecipientPointingAtTheChat(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	sink, err := telegram.New(botToken, api.URL, telegram.WithLimits(telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf}))
	if err != nil {
		t.Fatal(err)
	}
	to, err := delivery.ParseAddress(chat)
	if err != nil {
		t.Fatal(err)
	}
	table := delivery.NewTable(delivery.TableConfig{Named: map[string]delivery.Route{"ops-chat": {Sink: sink, To: to}}})
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	key := r.admit("hook:ci", "d-1", "ops-chat", inbound("deploy"), 0)
	r.start(table, "w", withHolds(r.prefs()))

	waitFor(t, func() bool { return r.effect(key).NotBefore.Equal(nextMorning) }, "the push to be held until 07:00")
	r.advance(nextMorning.Sub(t0) - time.Minute)
	if got := len(api.sent()); got != 0 {
		t.Fatalf("%d messages during quiet hours, want none", got)
	}
	r.advance(time.Minute)
	r.settled(key, store.Completed)
}

// releasingPrefs is the rig's prefs wired as serve wires it: a change
// of quiet hours or mutes lets out what they no longer hold.
func (r *rig) releasingPrefs() *chatprefs.Store {
	p := r.prefs()
	p.Changed = func(ctx context.Context, address string) {
		if _, err := r.d.Release(ctx, address); err != nil {
			r.t.Errorf("release: %v", err)
		}
	}
	return p
}

// TestQuietOffReleasesHeldPushesNowAsOneMessage: "/quiet off" promises
// that held pushes arrive now. They do, long before the old window ends,
// and a task's held changes arrive as one collapsed message.
func TestQuietOffReleasesHeldPushesNowAsOneMessage(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	a := r.admit("t-news", "n1@v1", chat, changed("t-news", "n1", "Library hours changed"), 0)
	b := r.admit("t-news", "n2@v1", chat, changed("t-news", "n2", "Exam room changed"), 0)
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	for _, k := range []string{a, b} {
		waitFor(t, func() bool { return r.effect(k).NotBefore.Equal(nextMorning) }, "the push to be held until 07:00")
	}

	if err := r.releasingPrefs().Update(context.Background(), chat, func(p *chatprefs.Prefs) { p.Quiet = "" }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a, b} {
		if fx := r.settled(k, store.Completed); !fx.Attempts[0].Start.Equal(t0) {
			t.Errorf("%s sent at %s, want now (%s)", k, fx.Attempts[0].Start, t0)
		}
	}
	if got := api.sent(); len(got) != 1 || !strings.Contains(got[0], "Library hours") || !strings.Contains(got[0], "Exam room") {
		t.Errorf("Telegram received %d messages %q; want one with both changes", len(got), got)
	}
}

// TestMuteOffReleasesHeldPushesNow: "/mute <task> off" lets that task's
// held pushes out at once; a push another mute of the same chat still
// holds stays held.
func TestMuteOffReleasesHeldPushesNow(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	until := t0.Add(30 * time.Minute)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Mutes = map[string]time.Time{"t-news": until, "t-grades": until} })
	news := r.admit("t-news", "n1@v1", chat, changed("t-news", "n1", "Library hours changed"), 0)
	grades := r.admit("t-grades", "g1@v1", chat, changed("t-grades", "g1", "Grades posted"), 0)
	r.start(telegramRoute(t, api.URL), "w", withHolds(r.prefs()))
	for _, k := range []string{news, grades} {
		waitFor(t, func() bool { return r.effect(k).NotBefore.Equal(until) }, "the muted push to be held")
	}

	if err := r.releasingPrefs().Update(context.Background(), chat, func(p *chatprefs.Prefs) { delete(p.Mutes, "t-news") }); err != nil {
		t.Fatal(err)
	}
	if fx := r.settled(news, store.Completed); !fx.Attempts[0].Start.Equal(t0) {
		t.Errorf("unmuted push sent at %s, want now", fx.Attempts[0].Start)
	}
	r.advance(time.Minute)
	// A release lets the chat's held pushes be looked at again; the one
	// still muted is held again, unsent.
	waitFor(t, func() bool { return r.effect(grades).NotBefore.Equal(until) }, "the still-muted push to be held again")
	if fx := r.effect(grades); fx.State != store.Pending || !fx.NotBefore.Equal(until) || len(fx.Attempts) != 0 {
		t.Errorf("the push of the task still muted: %s at %s with %d attempts; want held until %s", fx.State, fx.NotBefore, len(fx.Attempts), until)
	}
	if got := len(api.sent()); got != 1 {
		t.Errorf("%d messages, want only the unmuted task's", got)
	}
}

// TestQuietHoursAndMuteHoldTheAskersInbox: /quiet and /mute set in a
// person's private chat hold their inbox too (the console has no other
// recipient), and lifting them lets the held items in at once.
func TestQuietHoursAndMuteHoldTheAskersInbox(t *testing.T) {
	r := newRig(t)
	route := delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: inbox.New(r.st.Inbox())}})
	for _, tc := range []struct{ chat, box string }{
		{"console:ann", "inbox:console:ann"},
		{"telegram:chat:42", "inbox:telegram:42"},
	} {
		r.setPrefs(tc.chat, func(p *chatprefs.Prefs) { p.Quiet = "22:00-07:00" })
	}
	r.setPrefs("console:ann", func(p *chatprefs.Prefs) { p.Mutes = map[string]time.Time{"t-news": t0.Add(time.Hour)} })
	quiet := r.admit("t-grades", "g1@v1", "inbox:telegram:42", changed("t-grades", "g1", "Grades posted"), 0)
	muted := r.admit("t-news", "n1@v1", "inbox:console:ann", changed("t-news", "n1", "Library hours changed"), 0)
	r.start(route, "w", withHolds(r.prefs()))
	waitFor(t, func() bool { return r.effect(quiet).NotBefore.Equal(nextMorning) }, "the inbox push to be held by quiet hours")
	waitFor(t, func() bool { return r.effect(muted).NotBefore.Equal(t0.Add(time.Hour)) }, "the inbox push to be held by the mute")
	if n, _ := r.st.Inbox().Unread(context.Background(), "telegram:42"); n != 0 {
		t.Fatalf("%d items in the inbox during quiet hours, want none", n)
	}

	if err := r.releasingPrefs().Update(context.Background(), "telegram:chat:42", func(p *chatprefs.Prefs) { p.Quiet = "" }); err != nil {
		t.Fatal(err)
	}
	r.settled(quiet, store.Completed)
	if n, _ := r.st.Inbox().Unread(context.Background(), "telegram:42"); n != 1 {
		t.Errorf("%d items in the inbox after /quiet off, want 1", n)
	}
	if fx := r.effect(muted); fx.State != store.Pending || len(fx.Attempts) != 0 {
		t.Errorf("the muted push of another person: %s with %d attempts; want still held", fx.State, len(fx.Attempts))
	}
}
