package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
)

const testToken = "123456:AAE-s3cr3tT0kenValue_xyz"

var noLimits = Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf}

// sent is one sendMessage call the fake received.
type sent struct {
	ChatID  string
	Text    string
	Parse   string
	Preview string
	Thread  string // message_thread_id ("" when the field was not sent)
}

// reply is how the fake answers one sendMessage call.
type reply struct {
	status int    // HTTP status; 0 = 200
	body   string // raw body; empty = success envelope
	header map[string]string
	hijack bool // read the request, then drop the connection
	hang   bool // never answer
}

// fakeTelegram speaks the Bot API wire format: /bot<token>/<method>,
// multipart requests, JSON envelopes with HTTP status = error_code.
type fakeTelegram struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []sent
	answer func(chatID string, n int) reply
	done   chan struct{}
	// forum, when set, makes every chat a forum with these topics (thread
	// id → open) and answers message_thread_id as the Bot API does.
	forum map[string]bool
}

func newFake(t *testing.T, answer func(chatID string, n int) reply) *fakeTelegram {
	f := &fakeTelegram{t: t, answer: answer, done: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(func() { close(f.done); f.srv.Close() })
	return f
}

func apiError(code int, desc string, params string) reply {
	body := fmt.Sprintf(`{"ok":false,"error_code":%d,"description":%q`, code, desc)
	if params != "" {
		body += `,"parameters":` + params
	}
	return reply{status: code, body: body + "}"}
}

func (f *fakeTelegram) handle(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + testToken + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		return
	}
	method := strings.ToLower(strings.TrimPrefix(r.URL.Path, prefix))
	if err := r.ParseMultipartForm(1 << 20); err != nil && !strings.Contains(err.Error(), "EOF") {
		f.t.Errorf("bad multipart body: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getme":
		fmt.Fprint(w, `{"ok":true,"result":{"id":123456,"is_bot":true,"first_name":"herald","username":"herald_bot"}}`)
		return
	case "sendmessage":
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
		return
	}
	s := sent{ChatID: r.FormValue("chat_id"), Text: r.FormValue("text"), Parse: r.FormValue("parse_mode"), Preview: r.FormValue("link_preview_options"),
		Thread: r.FormValue("message_thread_id")}
	f.mu.Lock()
	f.calls = append(f.calls, s)
	n := len(f.calls)
	f.mu.Unlock()
	rep := reply{}
	if f.answer != nil {
		rep = f.answer(s.ChatID, n)
	}
	if open, known := f.forum[s.Thread]; f.forum != nil && s.Thread != "" {
		switch {
		case !known || s.Thread == "1": // General is posted to without the field
			rep = apiError(400, "Bad Request: message thread not found", "")
		case !open:
			rep = apiError(400, "Bad Request: TOPIC_CLOSED", "")
		}
	}
	switch {
	case rep.hijack:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Fatal(err)
		}
		conn.Close()
		return
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.body == "" {
		rep.body = fmt.Sprintf(`{"ok":true,"result":{"message_id":%d,"date":1764464400,"chat":{"id":%s,"type":"private"},"text":"x"}}`, 100+n, s.ChatID)
	}
	if rep.status != 0 {
		w.WriteHeader(rep.status)
	}
	fmt.Fprint(w, rep.body)
}

func (f *fakeTelegram) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.calls...)
}

func newSink(t *testing.T, url string, opts ...Option) (*Sink, *deliverytest.LogBuffer) {
	t.Helper()
	log, buf := deliverytest.Logger()
	opts = append([]Option{WithLimits(noLimits), WithLogger(log)}, opts...)
	s, err := New(testToken, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, buf
}

func msg(title string) delivery.Message {
	return delivery.Message{Kind: delivery.KindTest, Title: title, OccurredAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
}

func to(id string) delivery.Address { return delivery.Address{Kind: delivery.TelegramChat, ID: id} }

func topic(id, thread string) delivery.Address {
	return delivery.Address{Kind: delivery.TelegramChat, ID: id, Topic: thread}
}

func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestI3_Classification(t *testing.T) {
	cases := []struct {
		name        string
		answer      reply
		refused     bool
		want        delivery.Result
		reason      string
		after       time.Duration
		unreachable bool
	}{
		{name: "completed", want: delivery.Completed},
		{name: "blocked", answer: apiError(403, "Forbidden: bot was blocked by the user", ""), want: delivery.Failed, reason: "blocked", unreachable: true},
		{name: "kicked", answer: apiError(403, "Forbidden: bot was kicked from the group chat", ""), want: delivery.Failed, reason: "kicked", unreachable: true},
		{name: "deactivated", answer: apiError(403, "Forbidden: user is deactivated", ""), want: delivery.Failed, reason: "deactivated", unreachable: true},
		{name: "group deleted", answer: apiError(403, "Forbidden: the group chat was deleted", ""), want: delivery.Failed, reason: "chat_deleted", unreachable: true},
		{name: "bad request", answer: apiError(400, "Bad Request: can't parse entities", ""), want: delivery.Failed, reason: "bad_request"},
		{name: "chat not found", answer: apiError(400, "Bad Request: chat not found", ""), want: delivery.Failed, reason: "chat_not_found", unreachable: true},
		{name: "unauthorized", answer: apiError(401, "Unauthorized", ""), want: delivery.Failed, reason: "unauthorized"},
		{name: "429 honoured", answer: func() reply {
			r := apiError(429, "Too Many Requests: retry after 7", `{"retry_after":7}`)
			r.header = map[string]string{"Retry-After": "7"}
			return r
		}(), want: delivery.RetryAfter, reason: "rate_limited", after: 7 * time.Second},
		{name: "502 envelope", answer: apiError(502, "Bad Gateway", ""), want: delivery.Unknown, reason: "http_502"},
		{name: "502 html", answer: reply{status: 502, body: "<html><body>502 Bad Gateway</body></html>"}, want: delivery.Unknown, reason: "bad_response"},
		{name: "connection dropped after request", answer: reply{hijack: true}, want: delivery.Unknown, reason: "connection_lost"},
		{name: "timeout", answer: reply{hang: true}, want: delivery.Unknown, reason: "timeout"},
		{name: "connection refused", refused: true, want: delivery.RetryAfter, reason: "connect_failed", after: 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := refusedURL(t)
			if !c.refused {
				url = newFake(t, func(string, int) reply { return c.answer }).srv.URL
			}
			s, logs := newSink(t, url, WithHTTPClient(&http.Client{Timeout: 500 * time.Millisecond}))
			got := s.Send(context.Background(), delivery.Delivery{Key: "k", To: to("987654321"), Message: msg("hi"), Lang: "en"})
			deliverytest.Outcome(t, got, c.want, c.reason)
			if got.After != c.after {
				t.Errorf("after = %v, want %v", got.After, c.after)
			}
			if got.Unreachable != c.unreachable {
				t.Errorf("unreachable = %v, want %v", got.Unreachable, c.unreachable)
			}
			// A chat that blocked, kicked or lost the bot is gone: it is
			// disabled (SPEC §21), through the mechanism every sink shares.
			gone := c.name == "blocked" || c.name == "kicked" || c.name == "deactivated" || c.name == "group deleted"
			if got.Gone != gone {
				t.Errorf("gone = %v, want %v", got.Gone, gone)
			}
			if c.want == delivery.Completed && got.ProviderID != "101" {
				t.Errorf("provider id = %q", got.ProviderID)
			}
			deliverytest.NoSecretInOutcome(t, got, testToken)
			deliverytest.NoSecretInLogs(t, logs, testToken, "987654321")
		})
	}
}

func TestSendsHTMLWithoutPreview(t *testing.T) {
	f := newFake(t, nil)
	s, _ := newSink(t, f.srv.URL)
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: `<script>&"x"`, Items: []delivery.Item{{Title: "a<b", URL: "https://e.com/?q=1&r=2", Change: delivery.ChangeNew}}}
	if got := s.Send(context.Background(), delivery.Delivery{To: to("42"), Message: m, Lang: "en"}); got.Result != delivery.Completed {
		t.Fatalf("outcome %+v", got)
	}
	calls := f.sent()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	if c.ChatID != "42" || c.Parse != "HTML" {
		t.Errorf("chat %q parse %q", c.ChatID, c.Parse)
	}
	var lp struct {
		IsDisabled bool `json:"is_disabled"`
	}
	if err := json.Unmarshal([]byte(c.Preview), &lp); err != nil || !lp.IsDisabled {
		t.Errorf("link preview options %q", c.Preview)
	}
	for _, want := range []string{"&lt;script&gt;&amp;\"x\"", `<a href="https://e.com/?q=1&amp;r=2">a&lt;b</a>`} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("text lacks %q: %s", want, c.Text)
		}
	}
}

func TestLongMessageSplitsIntoOrderedParts(t *testing.T) {
	f := newFake(t, nil)
	s, _ := newSink(t, f.srv.URL)
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "line %04d %s\n", i, strings.Repeat("y", 89))
	}
	m := msg("Report")
	m.Text = b.String()[:9000]
	d := delivery.Delivery{To: to("42"), Message: m, Lang: "en"}
	first := s.Send(context.Background(), d)
	if first.Parts != 3 {
		t.Fatalf("parts = %d, want 3", first.Parts)
	}
	for p := 1; p < first.Parts; p++ {
		d.Part = p
		if got := s.Send(context.Background(), d); got.Result != delivery.Completed || got.Parts != 3 {
			t.Fatalf("part %d: %+v", p, got)
		}
	}
	calls := f.sent()
	if len(calls) != 3 {
		t.Fatalf("%d calls", len(calls))
	}
	last := -1
	for i, c := range calls {
		if len([]rune(c.Text)) > 4096 {
			t.Errorf("part %d too long", i)
		}
		var n int
		idx := strings.Index(c.Text, "line ")
		fmt.Sscanf(c.Text[idx:], "line %d", &n)
		if n <= last {
			t.Errorf("part %d starts at line %d, after %d", i, n, last)
		}
		last = n
	}
	d.Part = 3
	if got := s.Send(context.Background(), d); got.Result != delivery.Failed {
		t.Errorf("part past the end: %+v", got)
	}
}

func TestMigrateFollowedOnce(t *testing.T) {
	cases := []struct {
		name  string
		want  delivery.Result
		calls int
	}{
		{"followed", delivery.Completed, 2},
		{"not twice", delivery.Failed, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, func(chat string, n int) reply {
				if chat == "-4242" || c.want == delivery.Failed {
					return apiError(400, "Bad Request: group chat was upgraded to a supergroup chat", fmt.Sprintf(`{"migrate_to_chat_id":-100%d}`, 4242+n))
				}
				return reply{}
			})
			s, logs := newSink(t, f.srv.URL)
			got := s.Send(context.Background(), delivery.Delivery{To: to("-4242"), Message: msg("hi"), Lang: "en"})
			deliverytest.Outcome(t, got, c.want, "")
			if got.MigratedTo != "telegram:chat:-1004243" {
				t.Errorf("migrated to %q", got.MigratedTo)
			}
			calls := f.sent()
			if len(calls) != c.calls || calls[1].ChatID != "-1004243" {
				t.Errorf("calls %+v", calls)
			}
			deliverytest.NoSecretInLogs(t, logs, "-4242", "-1004243", testToken)
		})
	}
}

func TestRejectsOtherAddresses(t *testing.T) {
	s, _ := newSink(t, refusedURL(t))
	for _, a := range []delivery.Address{{Kind: delivery.FeishuChat, ID: "oc_1"}, to("@name")} {
		if got := s.Send(context.Background(), delivery.Delivery{To: a, Message: msg("x")}); got.Result != delivery.Failed {
			t.Errorf("%v: %+v", a.Kind, got)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New(" ", ""); !errors.Is(err, ErrNoToken) {
		t.Errorf("empty token: %v", err)
	}
	if _, err := New(testToken, "ftp://x"); !errors.Is(err, ErrBadURL) {
		t.Errorf("bad url: %v", err)
	}
}

func TestI10_TokenNeverLeaks(t *testing.T) {
	answers := []reply{apiError(401, "Unauthorized", ""), apiError(502, "Bad Gateway", ""), {hijack: true}, {status: 200, body: "not json"}}
	urls := []string{refusedURL(t)}
	for _, a := range answers {
		urls = append(urls, newFake(t, func(string, int) reply { return a }).srv.URL)
	}
	// A wrong token path answers 404 through the same fake.
	for i, u := range urls {
		s, logs := newSink(t, u)
		got := s.Send(context.Background(), delivery.Delivery{To: to("987654321"), Message: msg("x")})
		if got.Result == delivery.Completed {
			t.Errorf("case %d completed", i)
		}
		deliverytest.NoSecretInOutcome(t, got, testToken, "987654321")
		deliverytest.NoSecretInLogs(t, logs, testToken, "987654321")
	}
}

func TestCancelledWhilePacingIsNotSent(t *testing.T) {
	f := newFake(t, nil)
	s, _ := newSink(t, f.srv.URL, WithLimits(DefaultLimits))
	d := delivery.Delivery{To: to("42"), Message: msg("x")}
	if got := s.Send(context.Background(), d); got.Result != delivery.Completed {
		t.Fatal(got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deliverytest.Outcome(t, s.Send(ctx, d), delivery.RetryAfter, "canceled")
	if n := len(f.sent()); n != 1 {
		t.Errorf("%d requests reached the API", n)
	}
}

// TestForumTopics: a topic address is sent with message_thread_id, the
// General topic without it; a closed or missing topic fails with its
// reason after one request, and nothing is posted to General instead.
func TestForumTopics(t *testing.T) {
	cases := []struct {
		name   string
		addr   string
		thread string // message_thread_id sent
		want   delivery.Result
		reason string
	}{
		{name: "open topic", addr: "telegram:chat:-1001234:topic:77", thread: "77", want: delivery.Completed},
		{name: "general topic", addr: "telegram:chat:-1001234:topic:1", thread: "", want: delivery.Completed},
		{name: "whole chat", addr: "telegram:chat:-1001234", thread: "", want: delivery.Completed},
		{name: "closed topic", addr: "telegram:chat:-1001234:topic:78", thread: "78", want: delivery.Failed, reason: "topic_closed"},
		{name: "deleted topic", addr: "telegram:chat:-1001234:topic:79", thread: "79", want: delivery.Failed, reason: "topic_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, nil)
			f.forum = map[string]bool{"77": true, "78": false}
			s, logs := newSink(t, f.srv.URL)
			a, err := delivery.ParseAddress(c.addr)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Send(context.Background(), delivery.Delivery{Key: "k", To: a, Message: msg("hi"), Lang: "en"})
			deliverytest.Outcome(t, got, c.want, c.reason)
			if c.want == delivery.Failed && !got.Unreachable {
				t.Errorf("a %s does not mark the recipient unreachable", c.reason)
			}
			calls := f.sent()
			if len(calls) != 1 || calls[0].ChatID != "-1001234" || calls[0].Thread != c.thread {
				t.Fatalf("calls %+v, want one to -1001234 in thread %q", calls, c.thread)
			}
			deliverytest.NoSecretInLogs(t, logs, testToken, "-1001234")
		})
	}
}

func TestClassifyTopicAnswers(t *testing.T) {
	for desc, reason := range map[string]string{
		"Bad Request: TOPIC_CLOSED":             "topic_closed",
		"Bad Request: message thread not found": "topic_not_found",
	} {
		f := newFake(t, func(string, int) reply { return apiError(400, desc, "") })
		s, _ := newSink(t, f.srv.URL)
		got := s.Send(context.Background(), delivery.Delivery{To: topic("-1001", "5"), Message: msg("x")})
		deliverytest.Outcome(t, got, delivery.Failed, reason)
		if got.After != 0 {
			t.Errorf("%s: a wait of %v, want none", reason, got.After)
		}
	}
}
