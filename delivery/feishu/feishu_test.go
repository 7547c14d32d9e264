package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
)

const appSecret = "app-s3cret-VALUE-9f8e"

var appSeq atomic.Int64

// newAppID returns a distinct app id per test.
func newAppID() string { return fmt.Sprintf("cli_test%06d", appSeq.Add(1)) }

// reply is how the fake answers one message call.
type reply struct {
	status int
	body   string
	header map[string]string
	hijack bool // process the message, then drop the connection
	hang   bool // never answer
}

// message is one message the fake accepted.
type message struct {
	IDType, ReceiveID, MsgType, Content, UUID, ID string
}

// fakeFeishu speaks the open platform wire format: the tenant token
// endpoint and im/v1/messages with Bearer check and uuid dedup.
type fakeFeishu struct {
	t      *testing.T
	srv    *httptest.Server
	appID  string
	expire int

	mu         sync.Mutex
	tokenCalls int
	valid      map[string]bool
	messages   []message
	byUUID     map[string]string
	calls      int
	answer     func(n int) reply
	// tokenGate, when set, holds token requests until it closes;
	// tokenHit receives as each one arrives.
	tokenGate chan struct{}
	tokenHit  chan struct{}
}

func newFake(t *testing.T, appID string, answer func(n int) reply) *fakeFeishu {
	f := &fakeFeishu{t: t, appID: appID, expire: 7200, valid: map[string]bool{}, byUUID: map[string]string{}, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Tt-Logid", "20261130000000TEST")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeFeishu) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeJSON(w, 400, `{"code":9499,"msg":"Bad Request"}`)
		return
	}
	switch r.URL.Path {
	case TokenPath:
		f.mu.Lock()
		gate, hit := f.tokenGate, f.tokenHit
		f.mu.Unlock()
		if gate != nil {
			hit <- struct{}{}
			<-gate
		}
		var in struct{ AppID, AppSecret string }
		var raw map[string]string
		_ = json.NewDecoder(r.Body).Decode(&raw)
		in.AppID, in.AppSecret = raw["app_id"], raw["app_secret"]
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokenCalls++
		if in.AppID != f.appID || in.AppSecret != appSecret {
			writeJSON(w, 400, `{"code":10014,"msg":"app secret invalid"}`)
			return
		}
		tok := fmt.Sprintf("t-g1044%04d", f.tokenCalls)
		f.valid[tok] = true
		writeJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"ok","tenant_access_token":%q,"expire":%d}`, tok, f.expire))
	case "/open-apis/im/v1/messages":
		f.message(w, r)
	default:
		writeJSON(w, 404, `{"code":404,"msg":"404 page not found"}`)
	}
}

func (f *fakeFeishu) message(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	if !ok || !f.valid[tok] {
		f.mu.Unlock()
		writeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization. Please make a request with token attached."}`)
		return
	}
	f.calls++
	n := f.calls
	f.mu.Unlock()
	var body struct {
		ReceiveID string `json:"receive_id"`
		MsgType   string `json:"msg_type"`
		Content   string `json:"content"`
		UUID      string `json:"uuid"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, 400, `{"code":230001,"msg":"bad body"}`)
		return
	}
	rep := reply{}
	if f.answer != nil {
		rep = f.answer(n)
	}
	if rep.hang {
		<-r.Context().Done()
		return
	}
	if rep.body != "" {
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		if strings.HasPrefix(rep.body, "{") {
			writeJSON(w, rep.status, rep.body)
		} else {
			w.WriteHeader(rep.status)
			io.WriteString(w, rep.body)
		}
		return
	}
	f.mu.Lock()
	id, dup := f.byUUID[body.UUID]
	if !dup || body.UUID == "" {
		id = fmt.Sprintf("om_%d", len(f.messages)+1)
		f.messages = append(f.messages, message{r.URL.Query().Get("receive_id_type"), body.ReceiveID, body.MsgType, body.Content, body.UUID, id})
		f.byUUID[body.UUID] = id
	}
	f.mu.Unlock()
	if rep.hijack {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	writeJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"success","data":{"message_id":%q,"msg_type":"interactive"}}`, id))
}

func (f *fakeFeishu) state() (tokenCalls int, messages []message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls, append([]message(nil), f.messages...)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newSink(t *testing.T, f *fakeFeishu, opts ...Option) (*Sink, *deliverytest.LogBuffer) {
	t.Helper()
	log, buf := deliverytest.Logger()
	s, err := New(f.appID, appSecret, f.srv.URL, append([]Option{WithLogger(log), WithHTTPClient(&http.Client{Timeout: time.Second})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, buf
}

var chat = delivery.Address{Kind: delivery.FeishuChat, ID: "oc_a0553eda9014c201e6969b478895c230", IDType: "chat_id"}

func deliveryFor(key string) delivery.Delivery {
	return delivery.Delivery{Key: key, To: chat, Lang: "en", Message: delivery.Message{
		Kind: delivery.KindChanged, TaskName: "Campus news", OccurredAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Items: []delivery.Item{{ID: "1", Title: "Library <opens> late", URL: "https://news.example.edu/1", Change: delivery.ChangeNew}},
	}}
}

func TestI3_Classification(t *testing.T) {
	cases := []struct {
		name        string
		answer      reply
		want        delivery.Result
		reason      string
		after       time.Duration
		unreachable bool
	}{
		{name: "completed", want: delivery.Completed},
		{name: "bot not in chat", answer: reply{status: 400, body: `{"code":230002,"msg":"Bot/User can NOT be out of the chat."}`}, want: delivery.Failed, reason: "bot_not_in_chat", unreachable: true},
		{name: "no permission", answer: reply{status: 400, body: `{"code":99991672,"msg":"Access denied."}`}, want: delivery.Failed, reason: "no_permission"},
		{name: "invalid receive id", answer: reply{status: 400, body: `{"code":230001,"msg":"Your request contains an invalid request parameter, ext=invalid receive_id: oc_a0553eda9014c201e6969b478895c230"}`}, want: delivery.Failed, reason: "bad_recipient"},
		{name: "429 honoured", answer: reply{status: 429, body: `{"code":99991400,"msg":"request trigger frequency limit"}`, header: map[string]string{"x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": "7"}}, want: delivery.RetryAfter, reason: "rate_limited", after: 7 * time.Second},
		{name: "chat rate limit", answer: reply{status: 400, body: `{"code":230020,"msg":"This operation triggers the frequency limit."}`}, want: delivery.RetryAfter, reason: "rate_limited", after: time.Second},
		{name: "token invalid", answer: reply{status: 400, body: `{"code":99991663,"msg":"Invalid access token for authorization."}`}, want: delivery.RetryAfter, reason: "token_invalid", after: time.Second},
		{name: "500 with code", answer: reply{status: 500, body: `{"code":1,"msg":"internal error"}`}, want: delivery.Unknown, reason: "http_500"},
		{name: "502 html", answer: reply{status: 502, body: `<html>502 Bad Gateway</html>`}, want: delivery.Unknown, reason: "http_502"},
		{name: "504", answer: reply{status: 504, body: `<html>504</html>`}, want: delivery.Unknown, reason: "http_504"},
		{name: "dropped after request", answer: reply{hijack: true}, want: delivery.Unknown, reason: "connection_lost"},
		{name: "timeout", answer: reply{hang: true}, want: delivery.Unknown, reason: "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, newAppID(), func(int) reply { return c.answer })
			s, logs := newSink(t, f)
			got := s.Send(context.Background(), deliveryFor("k1"))
			deliverytest.Outcome(t, got, c.want, c.reason)
			if got.After != c.after || got.Unreachable != c.unreachable {
				t.Errorf("after %v unreachable %v, want %v %v", got.After, got.Unreachable, c.after, c.unreachable)
			}
			if c.want == delivery.Completed && got.ProviderID != "om_1" {
				t.Errorf("provider id %q", got.ProviderID)
			}
			deliverytest.NoSecretInOutcome(t, got, appSecret, "t-g1044", chat.ID)
			deliverytest.NoSecretInLogs(t, logs, appSecret, "t-g1044", chat.ID)
		})
	}
}

func TestConnectionRefusedIsRetryAfter(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	s, _ := newSink(t, f)
	if got := s.Send(context.Background(), deliveryFor("k1")); got.Result != delivery.Completed {
		t.Fatalf("first send %+v", got)
	}
	f.srv.Close() // the cached token remains; the message dial is refused
	got := s.Send(context.Background(), deliveryFor("k2"))
	deliverytest.Outcome(t, got, delivery.RetryAfter, "connect_failed")
}

func TestTokenEndpointDownIsRetryAfter(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	f.srv.Close()
	s, _ := newSink(t, f)
	deliverytest.Outcome(t, s.Send(context.Background(), deliveryFor("k")), delivery.RetryAfter, "token_unavailable")
}

func TestBadCredentialsFail(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	log, logs := deliverytest.Logger()
	s, err := New(f.appID, "wrong-"+appSecret, f.srv.URL, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Send(context.Background(), deliveryFor("k"))
	deliverytest.Outcome(t, got, delivery.Failed, "credentials_rejected")
	deliverytest.NoSecretInLogs(t, logs, appSecret)
}

func TestTokenCachedAndRefreshed(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	clk := &clock{t: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	s, _ := newSink(t, f, WithClock(clk.now))
	send := func(key string) {
		t.Helper()
		if got := s.Send(context.Background(), deliveryFor(key)); got.Result != delivery.Completed {
			t.Fatalf("%s: %+v", key, got)
		}
	}
	send("a")
	send("b")
	if n, _ := f.state(); n != 1 {
		t.Fatalf("token fetched %d times for two sends", n)
	}
	clk.add(2*time.Hour - 3*time.Minute - time.Second)
	send("c")
	if n, _ := f.state(); n != 1 {
		t.Fatalf("token refetched before its renewal time")
	}
	clk.add(2 * time.Second)
	send("d")
	if n, _ := f.state(); n != 2 {
		t.Fatalf("token not refreshed 3 min before expiry (fetches %d)", n)
	}
}

func TestInvalidTokenDroppedAndRefetchedOnce(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	s, logs := newSink(t, f)
	if got := s.Send(context.Background(), deliveryFor("a")); got.Result != delivery.Completed {
		t.Fatal(got)
	}
	f.mu.Lock()
	f.valid = map[string]bool{} // the platform revokes the token
	f.mu.Unlock()
	// Refused at the gate, so nothing was sent: the same send goes out
	// again at once with a fresh token.
	deliverytest.Outcome(t, s.Send(context.Background(), deliveryFor("b")), delivery.Completed, "")
	deliverytest.Outcome(t, s.Send(context.Background(), deliveryFor("c")), delivery.Completed, "")
	n, msgs := f.state()
	if n != 2 || len(msgs) != 3 {
		t.Errorf("token fetches = %d, messages = %d; want 2 and 3", n, len(msgs))
	}
	deliverytest.NoSecretInLogs(t, logs, appSecret, "t-g1044", chat.ID)
}

func TestTokenRefusedTwiceIsLeftToTheDispatcher(t *testing.T) {
	refused := reply{status: 400, body: `{"code":99991663,"msg":"Invalid access token for authorization."}`}
	f := newFake(t, newAppID(), func(int) reply { return refused })
	s, _ := newSink(t, f)
	deliverytest.Outcome(t, s.Send(context.Background(), deliveryFor("a")), delivery.RetryAfter, "token_invalid")
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if n, msgs := f.state(); n != 2 || calls != 2 || len(msgs) != 0 {
		t.Errorf("token fetches %d, message calls %d, messages %d; want 2, 2, 0", n, calls, len(msgs))
	}
}

func TestSinkRefusesTheTokenSourceOfAnotherApp(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	for _, ts := range []*TokenSource{
		NewTokenSource("cli_other", appSecret, f.srv.URL, nil, nil),
		NewTokenSource(f.appID, appSecret, "https://open.larksuite.com", nil, nil),
	} {
		if _, err := New(f.appID, appSecret, f.srv.URL, WithTokenSource(ts)); !errors.Is(err, ErrConfig) {
			t.Errorf("New with a foreign token source: %v, want ErrConfig", err)
		}
	}
	if _, err := New(f.appID, appSecret, f.srv.URL+"/", WithTokenSource(NewTokenSource(f.appID, appSecret, f.srv.URL, nil, nil))); err != nil {
		t.Errorf("New with the app's own token source: %v", err)
	}
}

func TestI3_UnknownRetriedWithSameUUIDSendsOnce(t *testing.T) {
	f := newFake(t, newAppID(), func(n int) reply { return reply{hijack: n == 1} })
	s, _ := newSink(t, f)
	if !s.Dedups(chat) {
		t.Fatal("feishu sink must report that it deduplicates")
	}
	d := deliveryFor("task1/evt9/feishu:chat")
	deliverytest.Outcome(t, s.Send(context.Background(), d), delivery.Unknown, "connection_lost")
	d.Attempt = 2
	got := s.Send(context.Background(), d)
	deliverytest.Outcome(t, got, delivery.Completed, "")
	_, msgs := f.state()
	if len(msgs) != 1 || got.ProviderID != msgs[0].ID {
		t.Errorf("messages %+v, provider id %q", msgs, got.ProviderID)
	}
}

func TestSendsCardToChatAndUser(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	s, _ := newSink(t, f)
	user := delivery.Address{Kind: delivery.FeishuChat, ID: "ou_7d8a6e6df7621556ce0d21922b676706ccs", IDType: "open_id"}
	for _, a := range []delivery.Address{chat, user} {
		d := deliveryFor("k-" + a.IDType)
		d.To = a
		if got := s.Send(context.Background(), d); got.Result != delivery.Completed {
			t.Fatalf("%s: %+v", a.IDType, got)
		}
	}
	_, msgs := f.state()
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, want := range []delivery.Address{chat, user} {
		m := msgs[i]
		if m.IDType != want.IDType || m.ReceiveID != want.ID || m.MsgType != "interactive" {
			t.Errorf("message %d: %+v", i, m)
		}
		if m.UUID != UUID("k-"+want.IDType, 0) || len(m.UUID) > 50 {
			t.Errorf("uuid %q", m.UUID)
		}
		var card struct {
			Header struct{ Title struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(m.Content), &card); err != nil || card.Header.Title.Content != "1 change in Campus news" {
			t.Errorf("content %q: %v", m.Content, err)
		}
	}
}

func TestRejects(t *testing.T) {
	if _, err := New("", "x", ""); !errors.Is(err, ErrConfig) {
		t.Errorf("empty app id: %v", err)
	}
	if _, err := New("cli_x", "x", "ftp://x"); !errors.Is(err, ErrConfig) {
		t.Errorf("bad base: %v", err)
	}
	f := newFake(t, newAppID(), nil)
	s, _ := newSink(t, f)
	for _, d := range []delivery.Delivery{
		{To: delivery.Address{Kind: delivery.TelegramChat, ID: "1"}},
		{To: delivery.Address{Kind: delivery.FeishuChat, ID: "x", IDType: "email"}},
		{To: chat, Part: 1},
	} {
		if o := s.Send(context.Background(), d); o.Result != delivery.Failed {
			t.Errorf("%+v: %+v", d.To, o)
		}
	}
	if n, msgs := f.state(); n != 0 || len(msgs) != 0 {
		t.Error("rejected deliveries reached the platform")
	}
}

func TestNoKeyNoUUID(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	s, _ := newSink(t, f)
	for range 2 {
		if got := s.Send(context.Background(), deliveryFor("")); got.Result != delivery.Completed {
			t.Fatal(got)
		}
	}
	if _, msgs := f.state(); len(msgs) != 2 || msgs[0].UUID != "" {
		t.Errorf("messages without a key: %+v", msgs)
	}
}

func TestUUID(t *testing.T) {
	long := strings.Repeat("k", 500)
	if u := UUID(long, 0); len(u) != UUIDLen || u != UUID(long, 0) || u == UUID(long, 1) {
		t.Errorf("UUID not stable, bounded and per part: %q", u)
	}
}
