package feishu

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery"
	sink "github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

const (
	adminOpenID = "ou_admin0000000000000000000000001"
	bobOpenID   = "ou_bob00000000000000000000000001"
	chatAdmin   = "oc_admin000000000000000000000001"
)

// feed serves a podcast feed; add puts a new episode on top.
type feed struct {
	mu   sync.Mutex
	body string
	srv  *httptest.Server
}

func newFeed(t *testing.T) *feed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rss2-podcast-enclosures.xml"))
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{body: string(b)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
		w.Write([]byte(f.body))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *feed) add(title, link string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	item := "<item><title>" + title + "</title><link>" + link + "</link><guid>" + link + "</guid>" +
		"<pubDate>Wed, 20 Dec 2017 14:00:00 +0000</pubDate></item>"
	f.body = strings.Replace(f.body, "<item>", item+"<item>", 1)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 8s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// run runs fn until the test ends.
func run(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = fn(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// sentTo returns what the fake platform got for receive id id.
func sentTo(f *fakeFeishu, id string) []sent {
	var out []sent
	for _, s := range f.sent() {
		if s.ReceiveID == id {
			out = append(out, s)
		}
	}
	return out
}

// convRig is the real channel, conversation core, task manager,
// dispatcher and Feishu sink on one bbolt store, against one fake
// platform.
type convRig struct {
	fake  *fakeFeishu
	clock *tasks.ManualClock
	logs  *syncBuffer
	st    *bolt.Store
	m     *tasks.Manager
	ch    *Channel
}

// newConvRig starts a convRig whose sources come from open; each with
// adds to the core's options.
func newConvRig(t *testing.T, open func(*bolt.Store) tasks.SourceOpener, with ...func(*conversation.Options)) *convRig {
	t.Helper()
	appID := newAppID()
	r := &convRig{fake: newFake(t, appID), clock: tasks.NewManualClock(t0), logs: &syncBuffer{}}
	log := zerolog.New(r.logs).Level(zerolog.DebugLevel)

	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	t.Cleanup(func() { st.Close() })

	var dispatch *delivery.Dispatcher
	eng, err := engine.New(engine.Options{
		Store: st, Clock: r.clock, Holder: "replica-a", Log: log, RetryWaits: []time.Duration{0, 0},
		// The test moves its clock by half an hour at a time: a lease
		// shorter than that would lapse at each step and cancel the run.
		LeaseTTL: 24 * time.Hour,
		Policy: tasks.Policy{
			Admins: []string{"feishu:" + adminOpenID}, Requesters: []string{"feishu:*"},
			AllowedHosts: []string{"*.example.edu"}, AllowPrivate: true, Named: map[string]bool{},
		},
		Sources: open(st),
		WakeDelivery: func() {
			if dispatch != nil {
				dispatch.Wake()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	r.m = m
	push, err := sink.New(appID, testSecret, r.fake.srv.URL, sink.WithHTTPClient(r.fake.srv.Client()), sink.WithClock(r.clock.Now), sink.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	dispatch, err = delivery.NewDispatcher(delivery.Options{
		Ledger: st.Ledger(), Worker: "replica-a", Now: r.clock.Now, Log: log,
		Router: delivery.NewTable(delivery.TableConfig{
			Sinks: map[delivery.AddressKind]delivery.Sink{delivery.FeishuChat: push},
			Named: map[string]delivery.Route{}, Lang: "en", Disabled: map[delivery.AddressKind]string{},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	co := conversation.Options{Tasks: m, Store: st, Lang: "en", Log: log, Now: r.clock.Now,
		ChatPerMinute: 6000, ChatBurst: 1000}
	for _, w := range with {
		w(&co)
	}
	core, err := conversation.New(co)
	if err != nil {
		t.Fatal(err)
	}
	r.ch, err = New(Options{
		AppID: appID, AppSecret: testSecret, Mode: ModeWebhook, VerificationToken: testToken, EncryptKey: testKey,
		BaseURL: r.fake.srv.URL, Handler: core, Store: st, Log: log, HTTPClient: r.fake.srv.Client(), Now: r.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.AddSender("feishu", r.ch)
	run(t, eng.Run)
	waitFor(t, "scheduler ownership", func() bool { ok, _ := eng.Scheduler.Owner(); return ok })
	run(t, dispatch.Run)
	run(t, core.Run)
	run(t, r.ch.Run)
	return r
}

// post sends a plaintext event the way the platform does: encrypted and
// signed.
func (r *convRig) post(t *testing.T, plain []byte) *httptest.ResponseRecorder {
	t.Helper()
	body, h := seal(t, plain, testKey, r.clock.Now())
	req := httptest.NewRequest(http.MethodPost, "/feishu/events", strings.NewReader(string(body)))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.ch.EventHandler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("event answered %d: %s", w.Code, w.Body)
	}
	return w
}

// TestConversation_RequestApprovePush runs the whole conversation: a
// request typed in Feishu, the admin's card approval (after a
// non-admin's press is refused), and the first new feed item pushed to
// the requester's chat exactly once, through the real manager, core,
// dispatcher and Feishu sink against one fake platform.
func TestConversation_RequestApprovePush(t *testing.T) {
	rss := newFeed(t)
	r := newConvRig(t, func(*bolt.Store) tasks.SourceOpener {
		return tasks.SourceOpenerFunc(func(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
			return source.New(spec, source.Options{AllowPrivate: true, DefaultZone: zone})
		})
	})
	fake, clock, logs, m := r.fake, r.clock, r.logs, r.m
	post := func(plain []byte) *httptest.ResponseRecorder { return r.post(t, plain) }

	// Alice asks in her private chat.
	feedURL := rss.srv.URL + "/feed.xml"
	post(messageEvent(testToken, "ev-req", "om_req", chatP2P, "p2p", "/watch "+feedURL+" every 30m as rss name Omni"))
	var reqID string
	waitFor(t, "the request's answer", func() bool {
		for _, s := range sentTo(fake, chatP2P) {
			if id := regexp.MustCompile(`r-[0-9a-z]+`).FindString(s.Content); id != "" {
				reqID = id
				return true
			}
		}
		return false
	})

	// The admin is asked, by a card with buttons in a private chat.
	waitFor(t, "the approval prompt", func() bool {
		for _, s := range sentTo(fake, adminOpenID) {
			if s.IDType == "open_id" && s.MsgType == "interactive" && strings.Contains(s.Content, `"arg":"`+reqID+`"`) {
				return true
			}
		}
		return false
	})
	tk := findTask(t, m, reqID)
	if tk.State != tasks.PendingApproval {
		t.Fatalf("task %s is %s before approval", tk.ID, tk.State)
	}

	// Bob is no admin: his press is refused with a toast, the card stays.
	w := post(cardEvent(testToken, "ev-bob", bobOpenID, chatAdmin, "om_prompt", map[string]string{"action": "approve", "arg": reqID}))
	var resp struct {
		Toast *struct{ Content string }
		Card  *json.RawMessage
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Toast == nil || !strings.Contains(resp.Toast.Content, "Only an admin") || resp.Card != nil {
		t.Fatalf("non-admin press answered %s", w.Body)
	}
	if tk := findTask(t, m, reqID); tk.State != tasks.PendingApproval {
		t.Fatalf("non-admin press changed the task to %s", tk.State)
	}

	// The admin approves by the card button.
	w = post(cardEvent(testToken, "ev-admin", adminOpenID, chatAdmin, "om_prompt", map[string]string{"action": "approve", "arg": reqID}))
	resp.Toast, resp.Card = nil, nil
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Toast == nil || resp.Toast.Content != "Approved" || resp.Card == nil || !strings.Contains(string(*resp.Card), "Approved "+reqID) {
		t.Fatalf("admin press answered %s", w.Body)
	}
	tk = findTask(t, m, reqID)
	if tk.State != tasks.Active {
		t.Fatalf("task %s is %s after approval", tk.ID, tk.State)
	}

	// The first run is a baseline: no push per existing episode (I2).
	waitFor(t, "the baseline run", func() bool { return runs(t, m, tk.ID) >= 1 })
	const title = "Herald Test Episode 99"
	rss.add(title, "https://theomnishow.omnigroup.com/episode/herald-test-episode-99/")
	for n := 2; n <= 3; n++ {
		clock.Advance(31 * time.Minute)
		waitFor(t, "the next run", func() bool { return runs(t, m, tk.ID) >= n })
	}
	waitFor(t, "the push", func() bool { return countTitle(fake, chatP2P, title) >= 1 })
	if n := countTitle(fake, chatP2P, title); n != 1 {
		t.Fatalf("new episode pushed %d times, want 1", n)
	}
	for _, s := range sentTo(fake, chatP2P) {
		if strings.Contains(s.Content, "Andrea McVittie") {
			t.Fatalf("an existing episode was pushed: %s", s.Content)
		}
	}
	for _, s := range []string{testSecret, testToken, testKey, "t-g1044"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("logs contain %q", s)
		}
	}
}

func findTask(t *testing.T, m *tasks.Manager, reqID string) *tasks.Task {
	t.Helper()
	all, err := m.List(context.Background(), "feishu:"+adminOpenID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range all {
		if tk.Request.ID == reqID {
			return tk
		}
	}
	t.Fatalf("no task for request %s", reqID)
	return nil
}

func runs(t *testing.T, m *tasks.Manager, id string) int {
	t.Helper()
	rs, err := m.Runs(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(rs)
}

func countTitle(f *fakeFeishu, chat, title string) int {
	n := 0
	for _, s := range sentTo(f, chat) {
		if strings.Contains(s.Content, title) {
			n++
		}
	}
	return n
}
