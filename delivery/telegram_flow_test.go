package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store"
)

const botToken = "123456:AAE-s3cr3tT0kenValue_xyz"

// fakeBotAPI speaks the Bot API wire format (/bot<token>/<method>,
// multipart requests, JSON envelopes whose HTTP status is the error code).
// sendMessage answers as send says; getUpdates as updates says.
type fakeBotAPI struct {
	*httptest.Server
	t       testing.TB
	mu      sync.Mutex
	texts   []string
	polls   []int // status of each getUpdates answer
	send    func(n int, w http.ResponseWriter) bool
	updates func(n int) int
}

func newFakeBotAPI(t testing.TB) *fakeBotAPI {
	f := &fakeBotAPI{t: t}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeBotAPI) handle(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + botToken + "/"
	w.Header().Set("Content-Type", "application/json")
	if !strings.HasPrefix(r.URL.Path, prefix) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && !strings.Contains(err.Error(), "EOF") {
		f.t.Errorf("bad multipart body: %v", err)
	}
	switch strings.ToLower(strings.TrimPrefix(r.URL.Path, prefix)) {
	case "getupdates":
		f.mu.Lock()
		code := http.StatusConflict
		if f.updates != nil {
			code = f.updates(len(f.polls) + 1)
		}
		f.polls = append(f.polls, code)
		f.mu.Unlock()
		w.WriteHeader(code)
		desc := "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
		if code >= 500 {
			desc = "Internal Server Error"
		}
		fmt.Fprintf(w, `{"ok":false,"error_code":%d,"description":%q}`, code, desc)
	case "sendmessage":
		f.mu.Lock()
		f.texts = append(f.texts, r.FormValue("text"))
		n := len(f.texts)
		f.mu.Unlock()
		if f.send != nil && !f.send(n, w) {
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":"x"}}`,
			100+n, r.FormValue("chat_id"))
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
	}
}

// refuseFirst answers the first sendMessage with Telegram's 429 and
// retry_after of the given seconds, and accepts the rest.
func refuseFirst(seconds int) func(n int, w http.ResponseWriter) bool {
	return func(n int, w http.ResponseWriter) bool {
		if n > 1 {
			return true
		}
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`, seconds, seconds)
		return false
	}
}

func (f *fakeBotAPI) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...)
}

func (f *fakeBotAPI) failedPolls() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.polls...)
}

// telegramRoute routes telegram:chat:* through the real delivery sink.
func telegramRoute(t testing.TB, api string) *delivery.Table {
	t.Helper()
	sink, err := telegram.New(botToken, api, telegram.WithLimits(telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf}))
	if err != nil {
		t.Fatal(err)
	}
	return delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.TelegramChat: sink}})
}

// longMessage is a push of about 9,000 characters that Telegram needs in
// three parts.
func longMessage(t testing.TB) (delivery.Message, []string) {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "line %04d: the build log goes on and on so that one message cannot hold it\n", i)
	}
	m := delivery.Message{Kind: delivery.KindInbound, Title: "Nightly build log", Text: b.String(), OccurredAt: t0}
	parts := render.TelegramHTML(m, "en", time.UTC, t0)
	if len(parts) != 3 {
		t.Fatalf("the long message renders in %d parts, want 3", len(parts))
	}
	return m, parts
}

// TestTelegramLongMessageThreePartsInOrder: each part of a split message
// is its own recorded attempt, sent once, in order.
func TestTelegramLongMessageThreePartsInOrder(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	msg, parts := longMessage(t)
	key := r.admit("hook:ci", "log-1", "telegram:chat:42", msg, 0)
	r.start(telegramRoute(t, api.URL), "w", nil)

	fx := r.settled(key, store.Completed)
	if got := api.sent(); !equalStrings(got, parts) {
		t.Fatalf("Telegram received %d messages; want the 3 parts once each, in order", len(got))
	}
	if fx.PartsSent != 3 || len(fx.Attempts) != 3 {
		t.Fatalf("parts sent %d, %d attempts; want 3 and 3", fx.PartsSent, len(fx.Attempts))
	}
	for i, a := range fx.Attempts {
		want := store.Pending // accepted, more to come
		if i == 2 {
			want = store.Completed
		}
		if a.Part != i || a.Outcome != want || a.End.IsZero() {
			t.Errorf("attempt %d: part %d outcome %s ended %v; want part %d %s", i+1, a.Part, a.Outcome, !a.End.IsZero(), i, want)
		}
	}
	if fx.ProviderID != "103" {
		t.Errorf("provider id %q, want the last part's message id 103", fx.ProviderID)
	}
}

// TestI3_TelegramCrashBetweenPartsResumesAtNextPart: the process dies
// while part 2 is on the wire. After the restart the push is unknown and
// not resent; a human redelivery sends parts 2 and 3 only, part 1 never
// twice.
func TestI3_TelegramCrashBetweenPartsResumesAtNextPart(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	onWire := make(chan struct{})
	release := make(chan struct{})
	api.send = func(n int, w http.ResponseWriter) bool {
		if n != 2 {
			return true
		}
		close(onWire)
		<-release
		dropConnection(t, w)
		return false
	}
	msg, parts := longMessage(t)
	key := r.admit("hook:ci", "log-1", "telegram:chat:42", msg, 0)
	stop := r.start(telegramRoute(t, api.URL), "replica-a/1", nil)

	<-onWire
	if fx := r.effect(key); !fx.InFlight || fx.PartsSent != 1 || len(fx.Attempts) != 2 {
		t.Fatalf("with part 2 on the wire: in flight %t, parts sent %d, %d attempts", fx.InFlight, fx.PartsSent, len(fx.Attempts))
	}
	r.crash()
	close(release)
	stop()

	r.open()
	rec, err := r.st.Ledger().Recover(context.Background(), store.Recovery{Alive: func(w string) bool { return w == "replica-a/2" }}, r.clock.Now())
	if err != nil || len(rec) != 1 || rec[0].Key != key {
		t.Fatalf("recover: %v, %d interrupted; want this push", err, len(rec))
	}
	r.start(telegramRoute(t, api.URL), "replica-a/2", nil)
	fx := r.settled(key, store.Unknown)
	if fx.PartsSent != 1 {
		t.Fatalf("parts sent %d after the crash, want 1", fx.PartsSent)
	}
	r.advance(time.Hour)
	if got := len(api.sent()); got != 2 {
		t.Fatalf("%d sendMessage calls after the restart, want 2: unknown is not replayed", got)
	}

	if _, err := r.m.Redeliver(context.Background(), "console:admin", key); err != nil {
		t.Fatal(err)
	}
	fx = r.settled(key, store.Completed)
	got := api.sent()
	if want := []string{parts[0], parts[1], parts[1], parts[2]}; !equalStrings(got, want) {
		t.Errorf("Telegram received %d messages; want part 1, part 2 (lost), then parts 2 and 3", len(got))
	}
	if fx.PartsSent != 3 {
		t.Errorf("parts sent %d, want 3", fx.PartsSent)
	}
}

// TestI3_TelegramStopBetweenPartsResumesAutomatically: the process stops
// after part 1 was accepted and recorded, before part 2 began. Part 2
// provably never left, so the restarted dispatcher resumes at part 2 on
// its own, and part 1 is not sent again.
func TestI3_TelegramStopBetweenPartsResumesAutomatically(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	msg, parts := longMessage(t)
	key := r.admit("hook:ci", "log-1", "telegram:chat:42", msg, 0)
	between := make(chan struct{})
	restarted := make(chan struct{})
	r.ledger.beforeBegin = func(k string) error {
		fx, err := r.st.Ledger().Get(context.Background(), k)
		if err == nil && fx.PartsSent == 1 {
			close(between)
			<-restarted
			return store.ErrUnavailable
		}
		return nil
	}
	stop := r.start(telegramRoute(t, api.URL), "replica-a/1", nil)

	<-between
	r.crash()
	close(restarted)
	stop()
	if got := len(api.sent()); got != 1 {
		t.Fatalf("%d parts sent before the stop, want 1", got)
	}

	r.open()
	rec, err := r.st.Ledger().Recover(context.Background(), store.Recovery{}, r.clock.Now())
	if err != nil || len(rec) != 0 {
		t.Fatalf("recover: %v, %d interrupted; want none (nothing was on the wire)", err, len(rec))
	}
	r.start(telegramRoute(t, api.URL), "replica-a/2", nil)
	r.advance(30 * time.Second) // the group is held together between parts for a while
	fx := r.settled(key, store.Completed)
	if got := api.sent(); !equalStrings(got, parts) {
		t.Errorf("Telegram received %d messages; want the 3 parts once each, in order", len(got))
	}
	if fx.PartsSent != 3 || len(fx.Attempts) != 3 {
		t.Errorf("parts sent %d, %d attempts; want 3 and 3", fx.PartsSent, len(fx.Attempts))
	}
}

// TestTelegramDeliveryWhilePollingFails: delivery has its own client and
// lifecycle. While the conversational side's long poll keeps failing
// (409: another poller; 500), pushes still go out through the delivery
// sink.
func TestTelegramDeliveryWhilePollingFails(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	api.updates = func(n int) int {
		if n%2 == 1 {
			return http.StatusConflict
		}
		return http.StatusInternalServerError
	}
	poller, err := bot.New(botToken, bot.WithServerURL(api.URL), bot.WithSkipGetMe(),
		bot.WithErrorsHandler(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	polling := make(chan struct{})
	go func() { poller.Start(ctx); close(polling) }()
	t.Cleanup(func() { cancel(); <-polling })
	waitFor(t, func() bool { return len(api.failedPolls()) >= 1 }, "the poller to fail")

	key := r.admit("hook:ci", "d-1", "telegram:chat:42", inbound("deploy"), 0)
	r.start(telegramRoute(t, api.URL), "w", nil)
	fx := r.settled(key, store.Completed)
	if len(fx.Attempts) != 1 || len(api.sent()) != 1 {
		t.Errorf("%d attempts, %d messages; want one of each", len(fx.Attempts), len(api.sent()))
	}
	for _, code := range api.failedPolls() {
		if code != http.StatusConflict && code != http.StatusInternalServerError {
			t.Errorf("a poll succeeded (%d); the conversational side was meant to be down", code)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTelegramRetryAfterHonoured: Telegram's 429 with retry_after is a
// durable wait in the queue, not a blocked worker and not an early retry.
func TestTelegramRetryAfterHonoured(t *testing.T) {
	r := newRig(t)
	api := newFakeBotAPI(t)
	api.send = refuseFirst(3)
	key := r.admit("hook:ci", "d-1", "telegram:chat:42", inbound("deploy"), 0)
	r.start(telegramRoute(t, api.URL), "w", nil)

	waitFor(t, func() bool { fx := r.effect(key); return len(fx.Attempts) == 1 && !fx.InFlight }, "the first attempt")
	if fx := r.effect(key); fx.State != store.Pending || !fx.NotBefore.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("after 429: %s until %s, want pending until %s", fx.State, fx.NotBefore, t0.Add(3*time.Second))
	}
	r.advance(3*time.Second - time.Millisecond)
	if got := len(api.sent()); got != 1 {
		t.Fatalf("%d calls before retry_after ended, want 1", got)
	}
	r.clock.Advance(time.Millisecond)
	fx := r.settled(key, store.Completed)
	if len(fx.Attempts) != 2 || !fx.Attempts[1].Start.Equal(t0.Add(3*time.Second)) {
		t.Errorf("attempts %+v; want the second at %s", fx.Attempts, t0.Add(3*time.Second))
	}
}
