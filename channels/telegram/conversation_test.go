package telegram

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	tgsink "github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// feed serves a real RSS document that the test can grow by one item.
type feed struct {
	mu   sync.Mutex
	body []byte
	srv  *httptest.Server
}

func newFeed(t *testing.T, path string) *feed {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{body: b}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		body := f.body
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// add puts a new item at the top of the channel.
func (f *feed) add(title, link string) {
	item := fmt.Sprintf("<item><title>%s</title><link>%s</link><guid>%s</guid><pubDate>Wed, 13 Dec 2017 14:00:00 +0000</pubDate><description>New episode.</description></item>", title, link, link)
	f.mu.Lock()
	f.body = []byte(strings.Replace(string(f.body), "<item>", item+"<item>", 1))
	f.mu.Unlock()
}

// sentTo returns the texts the bot sent to chat (its Telegram id).
func (f *fakeAPI) sentTo(chat string) []call {
	var out []call
	for _, c := range f.callsTo("sendMessage") {
		if c.Params["chat_id"] == chat {
			out = append(out, c)
		}
	}
	return out
}

func countContaining(calls []call, s string) int {
	n := 0
	for _, c := range calls {
		if strings.Contains(c.Params["text"], s) {
			n++
		}
	}
	return n
}

var reRequest = regexp.MustCompile(`r-[0-9a-f]{6}`)

// chatRig is the real channel, conversation core, task manager,
// dispatcher and Telegram delivery sink on one bbolt store, against a
// fake Bot API.
type chatRig struct {
	api   *fakeAPI
	clock *tasks.ManualClock
	st    *bolt.Store
	m     *tasks.Manager
	core  *conversation.Core
	logs  *deliverytest.LogBuffer
}

// newChatRig starts a chatRig whose sources come from open; with, when
// set, adds to the core's options.
func newChatRig(t *testing.T, p tasks.Policy, open func(*bolt.Store) tasks.SourceOpener, with func(*bolt.Store, *conversation.Options)) *chatRig {
	t.Helper()
	r := &chatRig{api: newFakeAPI(t), clock: tasks.NewManualClock(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	t.Cleanup(func() { st.Close() })
	log, logs := deliverytest.Logger()
	r.logs = logs

	var dispatch *delivery.Dispatcher
	eng, err := engine.New(engine.Options{
		Store: st, Clock: r.clock, Holder: "replica-a", Log: log,
		// Leases outlive the hours the test jumps: ownership stays put.
		LeaseTTL: 24 * time.Hour, Sources: open(st), Policy: p,
		RetryWaits:   []time.Duration{0, 0},
		WakeDelivery: func() { dispatch.Wake() },
	})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	r.m = m
	sink, err := tgsink.New(testToken, r.api.srv.URL, tgsink.WithLimits(tgsink.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf}), tgsink.WithClock(r.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	dispatch, err = delivery.NewDispatcher(delivery.Options{
		Ledger: st.Ledger(), Worker: "replica-a", Log: log, Poll: 10 * time.Millisecond, Now: r.clock.Now,
		Router: delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.TelegramChat: sink}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	co := conversation.Options{Tasks: m, Store: st, Zone: time.UTC, BotName: testUsername, Log: log, Now: r.clock.Now,
		ChatPerMinute: 6000, ChatBurst: 1000}
	if with != nil {
		with(st, &co)
	}
	r.core, err = conversation.New(co)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := New(Options{Token: testToken, APIURL: r.api.srv.URL, Handler: r.core, Store: st, Holder: "replica-a", Log: log,
		PollTimeout: 2 * time.Second, LeaseTTL: 24 * time.Hour, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.core.AddSender("telegram", ch)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{eng.Run, r.core.Run, ch.Run, func(ctx context.Context) error { dispatch.Run(ctx); return nil }} {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "scheduling owner", func() bool { ok, _ := eng.Scheduler.Owner(); return ok })
	return r
}

// TestWholeConversation runs a request from a Telegram chat to a pushed
// change: the real channel, conversation core, task manager, dispatcher
// and Telegram delivery sink on one bbolt store, against a fake Bot API
// and a real RSS document served locally.
func TestWholeConversation(t *testing.T) {
	const (
		adminID     = "10001"
		requesterID = "20002"
		strangerID  = "30003"
	)
	rss := newFeed(t, filepath.Join("testdata", "rss2-podcast-enclosures.xml"))
	r := newChatRig(t, tasks.Policy{
		Admins:       []string{"telegram:" + adminID},
		Requesters:   []string{"telegram:*"},
		AllowedHosts: []string{"*.example.edu"},
		AllowPrivate: true, // the feed is served on 127.0.0.1
		Named:        map[string]bool{},
	}, func(*bolt.Store) tasks.SourceOpener {
		return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
			return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone})
		})
	}, nil)
	api, clock, st, m := r.api, r.clock, r.st, r.m

	// The requester asks to watch the feed.
	feedURL := rss.srv.URL + "/feed.xml"
	api.push(fmt.Sprintf(`{"update_id":500,"message":{"message_id":1,"date":1764464400,"from":{"id":%s,"is_bot":false,"first_name":"Ada","language_code":"en"},"chat":{"id":%s,"type":"private"},"text":"/watch %s every 1h"}}`,
		requesterID, requesterID, feedURL))
	waitFor(t, "reply to the request", func() bool { return len(api.sentTo(requesterID)) == 1 })
	rid := reRequest.FindString(api.sentTo(requesterID)[0].Params["text"])
	if rid == "" {
		t.Fatalf("no request id in %q", api.sentTo(requesterID)[0].Params["text"])
	}

	// The admin is prompted in a private chat, with buttons.
	waitFor(t, "approval prompt", func() bool { return len(api.sentTo(adminID)) == 1 })
	prompt := api.sentTo(adminID)[0]
	if !strings.Contains(prompt.Params["reply_markup"], `"callback_data":"approve:`+rid+`"`) ||
		!strings.Contains(prompt.Params["reply_markup"], `"callback_data":"reject:`+rid+`"`) {
		t.Fatalf("prompt keyboard = %s", prompt.Params["reply_markup"])
	}
	promptID := prompt.Params["_message_id"]

	// Someone who is not an admin presses Approve: refused, nothing edited.
	api.push(fmt.Sprintf(`{"update_id":501,"callback_query":{"id":"cb-stranger","from":{"id":%s,"is_bot":false,"first_name":"Eve","language_code":"en"},"message":{"message_id":%s,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":"Request"},"chat_instance":"9","data":"approve:%s"}}`,
		strangerID, promptID, adminID, rid))
	waitFor(t, "stranger answered", func() bool { return len(api.callsTo("answerCallbackQuery")) == 1 })
	if got := api.callsTo("answerCallbackQuery")[0].Params; got["callback_query_id"] != "cb-stranger" || !strings.Contains(got["text"], "Only an admin") {
		t.Fatalf("stranger's press answered %v", got)
	}
	if n := len(api.callsTo("editMessageText")); n != 0 {
		t.Fatalf("a refused press edited the prompt")
	}
	if list, _ := m.List(context.Background(), ""); len(list) != 1 || list[0].State != tasks.PendingApproval {
		t.Fatalf("after a refused press the request is %+v", list)
	}

	// The admin presses Approve.
	api.push(fmt.Sprintf(`{"update_id":502,"callback_query":{"id":"cb-admin","from":{"id":%s,"is_bot":false,"first_name":"Grace","language_code":"en"},"message":{"message_id":%s,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":"Request"},"chat_instance":"9","data":"approve:%s"}}`,
		adminID, promptID, adminID, rid))
	waitFor(t, "admin answered", func() bool { return len(api.callsTo("answerCallbackQuery")) == 2 })
	if got := api.callsTo("answerCallbackQuery")[1].Params; got["callback_query_id"] != "cb-admin" || got["text"] != "Approved" {
		t.Fatalf("admin's press answered %v", got)
	}
	waitFor(t, "prompt edited", func() bool { return len(api.callsTo("editMessageText")) == 1 })
	edit := api.callsTo("editMessageText")[0].Params
	if edit["chat_id"] != adminID || edit["message_id"] != promptID || !strings.Contains(edit["text"], "Approved "+rid) || edit["reply_markup"] != `{"inline_keyboard":[]}` {
		t.Fatalf("edit = %v", edit)
	}
	list, err := m.List(context.Background(), "")
	if err != nil || len(list) != 1 || list[0].State != tasks.Active {
		t.Fatalf("after approval: %+v %v", list, err)
	}
	taskID := list[0].ID

	// The first run is the baseline: one short confirmation, no item pushes.
	waitFor(t, "baseline confirmation", func() bool { return countContaining(api.sentTo(requesterID), "Now watching") == 1 })
	waitFor(t, "decision notice", func() bool { return countContaining(api.sentTo(requesterID), "was approved by") == 1 })
	if n := countContaining(api.sentTo(requesterID), "Kristina Sontag"); n != 0 {
		t.Fatalf("baseline pushed %d existing items", n)
	}

	// The feed gains an item; the next scheduled run pushes it, once.
	rss.add("Ken Case, CEO", "https://theomnishow.omnigroup.com/episode/ken-case-ceo/")
	runs := func() int { r, _ := m.Runs(context.Background(), taskID, 0); return len(r) }
	// advanceUntil moves the clock an hour at a time, whenever the
	// manager sleeps on its timers (lease renewal and the next check),
	// until cond holds.
	advanceUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(8 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			if clock.Waiters() >= 2 {
				clock.Advance(time.Hour)
			}
			for i := 0; i < 100 && !cond(); i++ {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	advanceUntil("change pushed", func() bool { return countContaining(api.sentTo(requesterID), "Ken Case, CEO") == 1 })

	// Later runs find nothing new and push nothing.
	before := runs()
	advanceUntil("a later run", func() bool { return runs() > before })
	waitFor(t, "delivery queue drained", func() bool {
		due, err := st.Ledger().Due(context.Background(), clock.Now().Add(time.Hour), 1)
		return err == nil && len(due) == 0
	})
	if n := countContaining(api.sentTo(requesterID), "Ken Case, CEO"); n != 1 {
		t.Fatalf("the new item was pushed %d times, want 1", n)
	}
	if n := len(api.sentTo(requesterID)); n != 4 {
		for _, c := range api.sentTo(requesterID) {
			t.Logf("to requester: %q", c.Params["text"])
		}
		t.Fatalf("requester got %d messages, want 4 (reply, decision, baseline, change)", n)
	}
	if n := len(api.sentTo(strangerID)); n != 0 {
		t.Fatalf("stranger got %d messages", n)
	}
}
