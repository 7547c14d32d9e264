package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/watch"
)

// digestFire is 08:00 after t0 (23:00): the fire of "daily 08:00 UTC".
var digestFire = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// dailyDigest is the plan of recipients.<name>.digest: "daily 08:00 UTC".
func dailyDigest(t testing.TB, max int) delivery.DigestPlan {
	t.Helper()
	s, err := schedule.Parse("daily 08:00 UTC", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return delivery.DigestPlan{Schedule: s, MaxItems: max}
}

// digestWebhookRoute is webhookRoute with a digest on "ops".
func digestWebhookRoute(t testing.TB, rv *receiver, plan delivery.DigestPlan) *delivery.Table {
	t.Helper()
	table := webhookRoute(t, rv, false)
	route, err := table.Resolve("ops")
	if err != nil {
		t.Fatal(err)
	}
	route.Digest = plan
	return delivery.NewTable(delivery.TableConfig{Named: map[string]delivery.Route{"ops": route}})
}

// digestBody is what a webhook receiver reads of a POST.
type digestBody struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Items []struct {
		ID, Title, Task, Change string
	} `json:"items"`
}

func decodeBodies(t *testing.T, hits []hit) []digestBody {
	t.Helper()
	out := make([]digestBody, len(hits))
	for i, h := range hits {
		if err := json.Unmarshal(h.Body, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// admitDigestNotices admits three change notices from two tasks to "ops".
func (r *rig) admitDigestNotices() []string {
	r.t.Helper()
	var keys []string
	for i, n := range []struct{ task, item, title string }{
		{"t-news", "n1", "Library hours changed"}, {"t-exams", "e1", "Exam moved to B202"}, {"t-news", "n2", "Guest talk"},
	} {
		if i > 0 {
			r.clock.Advance(time.Minute)
		}
		keys = append(keys, r.admit(n.task, n.item+"@v1", "ops", changed(n.task, n.item, n.title), 0))
	}
	return keys
}

// TestDigest_DailyHoldsThreeItemsAndSendsOneMessageAtTheFire: a named
// webhook recipient with `digest: daily 08:00 UTC` gets three change
// notices of two tasks during the night. They wait in the ledger without
// an attempt; at 08:00 exactly one POST goes out, a watch.digest listing
// all three items by their task, and every notice ends as sent on in it.
func TestDigest_DailyHoldsThreeItemsAndSendsOneMessageAtTheFire(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	keys := r.admitDigestNotices()
	r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	for _, k := range keys {
		waitFor(t, func() bool { return r.effect(k).NotBefore.Equal(digestFire) }, "notice %s to wait for the digest", k)
		if fx := r.effect(k); fx.State != store.Pending || len(fx.Attempts) != 0 {
			t.Fatalf("held notice: %s with %d attempts; want pending with none", fx.State, len(fx.Attempts))
		}
	}
	r.advance(digestFire.Sub(r.clock.Now()) - time.Minute)
	if n := len(rv.received()); n != 0 {
		t.Fatalf("%d POSTs before the digest fired, want none", n)
	}
	r.advance(time.Minute)
	for _, k := range keys {
		fx := r.settled(k, store.Completed)
		if !strings.HasPrefix(fx.Error, "sent on in digest ") {
			t.Errorf("notice ended %q; want sent on in the digest", fx.Error)
		}
	}
	digests, err := r.st.Ledger().List(context.Background(), "digest", 0)
	if err != nil || len(digests) != 1 {
		t.Fatalf("digests claimed: %d (%v); want one", len(digests), err)
	}
	r.settled(digests[0].Key, store.Completed)
	r.advance(time.Hour)
	bodies := decodeBodies(t, rv.received())
	if len(bodies) != 1 {
		t.Fatalf("%d POSTs, want exactly one digest", len(bodies))
	}
	b := bodies[0]
	if b.Type != delivery.KindDigest || b.ID != digests[0].Key || len(b.Items) != 3 {
		t.Fatalf("POST %s %s with %d items; want the watch.digest with three", b.Type, b.ID, len(b.Items))
	}
	tasksOf := map[string]string{}
	for _, it := range b.Items {
		tasksOf[it.ID] = it.Task
	}
	if tasksOf["n1"] != "t-news" || tasksOf["n2"] != "t-news" || tasksOf["e1"] != "t-exams" {
		t.Errorf("items name their tasks as %v", tasksOf)
	}
}

// TestDigest_ReminderDueBeforeTheDigestIsNotHeld: in a chat that set
// /digest daily 08:00, a deadline reminder due at 04:00 goes out at once;
// one due after the fire waits for the digest with the chat's news.
func TestDigest_ReminderDueBeforeTheDigestIsNotHeld(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Digest = "daily 08:00" })
	news := r.admit("t-news", "n1@v1", chat, changed("t-news", "n1", "Library hours changed"), 0)
	soon := r.commitReminder("hw-cs", "hw-4", chat, t0.Add(5*time.Hour))
	later := r.commitReminder("hw-math", "ps-9", chat, digestFire.Add(26*time.Hour))
	r.start(telegramRoute(t, api.URL), "w", withDigests(r.prefs()))

	fx := r.settled(soon, store.Completed)
	if !fx.Attempts[0].Start.Equal(t0) {
		t.Errorf("the reminder due before the digest went at %s, want at once", fx.Attempts[0].Start)
	}
	waitFor(t, func() bool { return r.effect(news).NotBefore.Equal(digestFire) }, "the news to wait for the digest")
	waitFor(t, func() bool { return r.effect(later).NotBefore.Equal(digestFire) }, "the later reminder to wait for the digest")
	if got := api.sent(); len(got) != 1 || !strings.Contains(got[0], "hw-4") {
		t.Fatalf("sent %q before the digest; want only the reminder of hw-4", got)
	}
	r.advance(digestFire.Sub(r.clock.Now()))
	r.settled(news, store.Completed)
	r.settled(later, store.Completed)
	r.digestSent()
	r.advance(time.Minute)
	got := api.sent()
	if len(got) != 2 {
		t.Fatalf("%d messages, want the reminder and one digest", len(got))
	}
	if d := got[1]; !strings.Contains(d, "Digest: 2 changes") || !strings.Contains(d, "Library hours changed") || !strings.Contains(d, "ps-9") {
		t.Errorf("digest reads %q; want the news and the later reminder", d)
	}
}

// withDigests wires chats' /digest as serve does.
func withDigests(ps *chatprefs.Store) func(*delivery.Options) {
	return func(o *delivery.Options) {
		o.Holds = delivery.PrefHolds{Prefs: ps}
		o.Digests = delivery.PrefDigests{Prefs: ps}
	}
}

// TestDigest_EmptyWindowSendsNothing: a digest schedule whose window
// held nothing claims nothing and sends nothing at its fire.
func TestDigest_EmptyWindowSendsNothing(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	r.advance(digestFire.Sub(r.clock.Now()))
	r.advance(time.Hour)
	if n := len(rv.received()); n != 0 {
		t.Errorf("%d POSTs for an empty window, want none", n)
	}
	if fxs, err := r.st.Ledger().List(context.Background(), "digest", 0); err != nil || len(fxs) != 0 {
		t.Errorf("%d digests claimed (%v), want none", len(fxs), err)
	}
}

// TestI1_DigestClaimedBeforeACrashIsSentOnceAfterIt: the process stops
// right after claiming the digest, before any of its notices ended and
// before it was begun. After the restart the digest goes out once, its
// notices end as sent on in it, and nothing goes out again.
func TestI1_DigestClaimedBeforeACrashIsSentOnceAfterIt(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	keys := r.admitDigestNotices()
	stopped := errors.New("process stopped")
	r.ledger.beforeBegin = func(string) error { return stopped }
	stop := r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	waitFor(t, func() bool { return r.effect(keys[2]).NotBefore.Equal(digestFire) }, "the notices to wait for the digest")
	r.clock.Advance(digestFire.Sub(r.clock.Now()))
	r.wakeDispatcher()
	var digests []store.Effect
	waitFor(t, func() bool {
		digests, _ = r.st.Ledger().List(context.Background(), "digest", 0)
		return len(digests) == 1
	}, "the digest to be claimed")
	stop()
	r.crash()
	if n := len(rv.received()); n != 0 {
		t.Fatalf("%d POSTs before the crash, want none", n)
	}

	r.open()
	r.ledger.beforeBegin = nil
	r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	r.advance(time.Second)
	r.settled(digests[0].Key, store.Completed)
	for _, k := range keys {
		r.settled(k, store.Completed)
	}
	r.advance(time.Hour)
	r.advance(24 * time.Hour) // past the next fire too
	bodies := decodeBodies(t, rv.received())
	if len(bodies) != 1 || bodies[0].ID != digests[0].Key || len(bodies[0].Items) != 3 {
		t.Fatalf("after the restart the receiver got %d POSTs (%+v); want the one digest with three items", len(bodies), bodies)
	}
}

// TestDigest_TwoDispatchersClaimOneDigest: two replicas' dispatchers over
// one ledger take the window's notices at the fire at once; one digest is
// claimed and sent, once.
func TestDigest_TwoDispatchersClaimOneDigest(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	keys := r.admitDigestNotices()
	route := digestWebhookRoute(t, rv, dailyDigest(t, 0))
	r.start(route, "w-a", nil)
	waitFor(t, func() bool { return r.effect(keys[2]).NotBefore.Equal(digestFire) }, "the notices to wait for the digest")
	r.start(route, "w-b", nil)
	r.advance(digestFire.Sub(r.clock.Now()))
	for _, k := range keys {
		r.settled(k, store.Completed)
	}
	r.digestSent()
	r.advance(time.Hour)
	if bodies := decodeBodies(t, rv.received()); len(bodies) != 1 || len(bodies[0].Items) != 3 {
		t.Fatalf("the receiver got %+v; want one digest with three items", bodies)
	}
}

// TestDigest_MaxItemsAndTheRestInTheInbox: a chat's digest lists at most
// digest_max_items items and says how many more wait in the inbox, where
// they are.
func TestDigest_MaxItemsAndTheRestInTheInbox(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	box := inbox.New(r.st.Inbox())
	table := telegramRoute(t, api.URL)
	tg, err := table.Resolve(chat)
	if err != nil {
		t.Fatal(err)
	}
	table.Swap(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.TelegramChat: tg.Sink, delivery.InboxAddr: box}})
	r.setPrefs(chat, func(p *chatprefs.Prefs) { p.Digest = "daily 08:00" })
	var keys []string
	for i := range 5 {
		r.clock.Advance(time.Minute)
		keys = append(keys, r.admit("t-news", fmt.Sprintf("n%d@v1", i), chat, changed("t-news", fmt.Sprintf("n%d", i), fmt.Sprintf("Item %d", i)), 0))
	}
	r.start(table, "w", func(o *delivery.Options) {
		withDigests(r.prefs())(o)
		o.Digests = maxItems{o.Digests, 3}
	})
	r.heldForDigest(digestFire, keys...)
	r.advance(digestFire.Sub(r.clock.Now()))
	waitFor(t, func() bool { return len(api.sent()) == 1 }, "the digest")
	got := api.sent()[0]
	if !strings.Contains(got, "Item 2") || strings.Contains(got, "Item 3") || !strings.Contains(got, "2 more wait in your inbox") {
		t.Errorf("digest reads %q; want three items and a line saying two more wait in the inbox", got)
	}
	var items []store.InboxItem
	waitFor(t, func() bool {
		items, _ = r.st.Inbox().List(context.Background(), "telegram:42", store.InboxQuery{})
		return len(items) == 1
	}, "the rest in the inbox")
	var rest delivery.Message
	if err := json.Unmarshal(items[0].Body, &rest); err != nil {
		t.Fatal(err)
	}
	if len(rest.Items) != 2 || rest.Items[0].Title != "Item 3" {
		t.Errorf("the inbox holds %+v; want items 3 and 4", rest.Items)
	}
}

// maxItems is a DigestPolicy with digest_max_items set.
type maxItems struct {
	delivery.DigestPolicy
	n int
}

func (m maxItems) Digest(ctx context.Context, recipient, chat string) (delivery.DigestPlan, bool) {
	p, ok := m.DigestPolicy.Digest(ctx, recipient, chat)
	p.MaxItems = m.n
	return p, ok
}

// TestI2_DigestBaselineStaysQuiet: a task's first run notifying a digest
// recipient pushes nothing and the digest window stays empty; the next
// run's three new items go out as one digest at the fire.
func TestI2_DigestBaselineStaysQuiet(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	rv := newReceiver(t, nil)
	r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
		Name: "Campus news", Notify: []string{"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	run := r.runs(tk.ID)
	feed := []watch.Item{{ID: "a", Title: "A", Digest: "a"}, {ID: "b", Title: "B", Digest: "b"}}
	if rec := run(feed...); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run: %s, want the baseline", rec.Outcome)
	}
	r.advance(digestFire.Sub(r.clock.Now()))
	r.advance(time.Hour)
	if got := postTypes(t, rv.received()); len(got) != 0 {
		t.Fatalf("the baseline pushed %q; want nothing", got)
	}
	feed = append(feed, watch.Item{ID: "c", Title: "C", Digest: "c"}, watch.Item{ID: "d", Title: "D", Digest: "d"},
		watch.Item{ID: "e", Title: "E", Digest: "e"})
	run(feed...)
	all, err := r.st.Ledger().List(ctx, tk.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	news := 0
	for _, fx := range all {
		if fx.Kind == delivery.KindChanged {
			r.heldForDigest(digestFire.Add(24*time.Hour), fx.Key)
			news++
		}
	}
	if news != 3 {
		t.Fatalf("the second run claimed %d change notices, want three", news)
	}
	r.advance(24 * time.Hour)
	r.digestSent()
	r.advance(time.Hour)
	if got := postTypes(t, rv.received()); len(got) != 1 || got[0] != "watch.digest new new new" {
		t.Errorf("the receiver got %q; want one digest of the three new items", got)
	}
}

// heldForDigest waits until each of keys waits for the digest firing at fire.
func (r *rig) heldForDigest(fire time.Time, keys ...string) {
	r.t.Helper()
	for _, k := range keys {
		waitFor(r.t, func() bool { return r.effect(k).NotBefore.Equal(fire) }, "notice %s to wait for the digest", k)
	}
}

// digestSent waits until one digest was claimed and its send ended.
func (r *rig) digestSent() store.Effect {
	r.t.Helper()
	var fxs []store.Effect
	waitFor(r.t, func() bool {
		fxs, _ = r.st.Ledger().List(context.Background(), "digest", 0)
		return len(fxs) > 0 && fxs[0].State != store.Pending
	}, "a digest to be sent")
	return fxs[0]
}

// TestDigest_QuietHoursHoldTheDigestAndMutesTheirTask: a digest that
// fires inside the chat's quiet hours waits, claimed, until they end and
// then goes once; a muted task's notice stays out of the digest while the
// mute lasts and goes in the next one after it.
func TestDigest_QuietHoursHoldTheDigestAndMutesTheirTask(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	quietEnd := digestFire.Add(time.Hour)
	r.setPrefs(chat, func(p *chatprefs.Prefs) {
		p.Digest, p.Quiet = "daily 08:00", "07:30-09:00"
		p.Mutes = map[string]time.Time{"t-muted": t0.Add(12 * time.Hour)} // 11:00, after the fire
	})
	news := r.admit("t-news", "n1@v1", chat, changed("t-news", "n1", "Library hours changed"), 0)
	muted := r.admit("t-muted", "m1@v1", chat, changed("t-muted", "m1", "Cafeteria menu"), 0)
	r.start(telegramRoute(t, api.URL), "w", withDigests(r.prefs()))
	r.heldForDigest(digestFire, news)
	waitFor(t, func() bool { return r.effect(muted).NotBefore.Equal(t0.Add(12 * time.Hour)) }, "the muted task's notice to be held by its mute")

	r.advance(digestFire.Sub(r.clock.Now()))
	r.settled(news, store.Completed)
	var digest store.Effect
	waitFor(t, func() bool {
		fxs, _ := r.st.Ledger().List(context.Background(), "digest", 0)
		if len(fxs) == 1 {
			digest = fxs[0]
		}
		return digest.NotBefore.Equal(quietEnd)
	}, "the digest to be claimed and held by quiet hours")
	r.advance(quietEnd.Sub(r.clock.Now()) - time.Minute)
	if got := api.sent(); len(got) != 0 {
		t.Fatalf("%d messages in quiet hours, want none", len(got))
	}
	r.advance(time.Minute)
	r.settled(digest.Key, store.Completed)
	r.advance(time.Minute)
	if got := api.sent(); len(got) != 1 || !strings.Contains(got[0], "Library hours changed") || strings.Contains(got[0], "Cafeteria") {
		t.Fatalf("sent %q; want one digest with the news and not the muted task's", got)
	}
	// 11:00: the mute ends; the notice waits for tomorrow's digest.
	r.advance(t0.Add(12 * time.Hour).Sub(r.clock.Now()))
	r.heldForDigest(digestFire.Add(24*time.Hour), muted)
	r.advance(time.Second) // a batch read before that hold finds it held (the manual clock jumps a day next)
	r.advance(digestFire.Add(24 * time.Hour).Sub(r.clock.Now()))
	r.settled(muted, store.Completed)
	r.advance(quietEnd.Add(24 * time.Hour).Sub(r.clock.Now()))
	waitFor(t, func() bool { return len(api.sent()) == 2 }, "the next digest at the end of quiet hours")
	if got := api.sent()[1]; !strings.Contains(got, "Cafeteria menu") {
		t.Errorf("the next digest reads %q; want the muted task's notice", got)
	}
}

// TestDigest_AnUnreadableNoticeDoesNotStopTheDigest: a held notice whose
// payload is no message ends failed (bad_payload) at the fire; the
// digest carries the rest.
func TestDigest_AnUnreadableNoticeDoesNotStopTheDigest(t *testing.T) {
	r := newRig(t)
	rv := newReceiver(t, nil)
	keys := r.admitDigestNotices()
	now := r.clock.Now()
	bad := store.Effect{Key: "fx_bad_payload", TaskID: "t-news", Recipient: "ops", Kind: delivery.KindChanged,
		Payload: []byte(`"not a message"`), NotBefore: now, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if _, err := r.st.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "t-news", Effects: []store.Effect{bad}}); err != nil {
		t.Fatal(err)
	}
	r.start(digestWebhookRoute(t, rv, dailyDigest(t, 0)), "w", nil)
	r.heldForDigest(digestFire, append(keys, bad.Key)...)
	r.advance(digestFire.Sub(r.clock.Now()))
	if fx := r.settled(bad.Key, store.Failed); fx.Error != "bad_payload" {
		t.Errorf("the unreadable notice ended %q, want bad_payload", fx.Error)
	}
	r.digestSent()
	r.advance(time.Minute)
	if bodies := decodeBodies(t, rv.received()); len(bodies) != 1 || len(bodies[0].Items) != 3 {
		t.Fatalf("the receiver got %+v; want one digest with the three readable items", bodies)
	}
}
