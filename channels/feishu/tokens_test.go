package feishu

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery"
	sink "github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/store/bolt"
)

// testClock is a clock tests move by hand, safe for concurrent readers.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// sharedApp is one app's chat channel and delivery sink on one token
// source, as serve wires them.
type sharedApp struct {
	*testRig
	push  *sink.Sink
	clock *testClock
}

func newSharedApp(t *testing.T) *sharedApp {
	t.Helper()
	a := &sharedApp{clock: &testClock{t: t0}}
	a.testRig = newTestChannel(t, false, func(o *Options) {
		o.Tokens = sink.NewTokenSource(o.AppID, o.AppSecret, o.BaseURL, nil, a.clock.now)
	})
	push, err := sink.New(a.fake.appID, testSecret, a.fake.srv.URL,
		sink.WithTokenSource(a.ch.o.Tokens), sink.WithLogger(zerolog.New(a.logs)))
	if err != nil {
		t.Fatal(err)
	}
	a.push = push
	return a
}

// round sends replies channel replies and pushes sink pushes, all at once.
func (a *sharedApp) round(tag string, replies, pushes int) {
	a.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, replies+pushes)
	for i := range replies {
		wg.Go(func() {
			if err := a.ch.Say(context.Background(), "feishu:chat:"+chatP2P, conversation.Reply{Text: fmt.Sprintf("reply %s%d", tag, i)}); err != nil {
				errs <- fmt.Errorf("reply %s%d: %w", tag, i, err)
			}
		})
	}
	for i := range pushes {
		wg.Go(func() {
			d := delivery.Delivery{
				Key: fmt.Sprintf("task/%s%d/feishu", tag, i), Lang: "en",
				To: delivery.Address{Kind: delivery.FeishuChat, ID: chatGroup, IDType: "chat_id"},
				Message: delivery.Message{Kind: delivery.KindChanged, TaskName: "Campus news", OccurredAt: t0,
					Items: []delivery.Item{{ID: "1", Title: "Library opens late", URL: "https://news.example.edu/1", Change: delivery.ChangeNew}}},
			}
			if out := a.push.Send(context.Background(), d); out.Result != delivery.Completed {
				errs <- fmt.Errorf("push %s%d: %s (%s)", tag, i, out.Result, out.Reason)
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		a.t.Fatal(err)
	}
}

func (a *sharedApp) tokenFetches() int {
	a.fake.mu.Lock()
	defer a.fake.mu.Unlock()
	return a.fake.tokenCalls
}

func TestChannelAndSinkOfOneAppFetchOneTenantToken(t *testing.T) {
	const replies, pushes = 12, 12
	a := newSharedApp(t)
	// A conversation turn through the event endpoint, then replies and
	// pushes together.
	if w := a.postEvent(messageEvent(testToken, "ev-1", "om_in1", chatP2P, "p2p", "hello")); w.Code != 200 {
		t.Fatalf("event answered %d", w.Code)
	}
	a.round("a", replies, pushes)
	if n := a.tokenFetches(); n != 1 {
		t.Fatalf("token fetches = %d for one turn, %d replies and %d pushes; want 1", n, replies, pushes)
	}

	tests := []struct {
		name  string
		spoil func()
	}{
		{"platform revokes the token", func() {
			a.fake.mu.Lock()
			a.fake.valid = map[string]bool{}
			a.fake.mu.Unlock()
		}},
		// Within TokenMargin of the stated 7200 s.
		{"token nears its stated expiry", func() { a.clock.add(2*time.Hour - sink.TokenMargin) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.tokenFetches()
			tt.spoil()
			a.round(fmt.Sprintf("s%d-", i), replies, pushes)
			if n := a.tokenFetches() - before; n != 1 {
				t.Fatalf("token refetches = %d serving %d replies and %d pushes; want 1", n, replies, pushes)
			}
		})
	}
	// The turn's echo and three rounds.
	if want := 1 + 3*(replies+pushes); len(a.fake.sent()) != want {
		t.Errorf("messages sent = %d, want %d", len(a.fake.sent()), want)
	}
}

func TestChannelRefusesTheTokenSourceOfAnotherApp(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const base = "http://127.0.0.1:1"
	tests := []struct {
		name   string
		tokens *sink.TokenSource
		ok     bool
	}{
		{"same app", sink.NewTokenSource("cli_this", testSecret, base+"/", nil, nil), true},
		{"another app", sink.NewTokenSource("cli_other", testSecret, base, nil, nil), false},
		{"another platform", sink.NewTokenSource("cli_this", testSecret, "", nil, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{
				AppID: "cli_this", AppSecret: testSecret, Mode: ModeWebhook, VerificationToken: testToken,
				BaseURL: base, Handler: &fakeHandler{}, Store: st, Tokens: tt.tokens,
			})
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Errorf("New = %v, want ok %v (else ErrConfig)", err, tt.ok)
			}
		})
	}
}
