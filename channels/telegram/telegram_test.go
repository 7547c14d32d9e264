package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
)

// recorder is a conversation handler that records what it is asked and
// answers with reply (default: one "ok: <text>" message).
type recorder struct {
	mu    sync.Mutex
	got   []conversation.Message
	reply func(conversation.Message) []conversation.Reply
}

var _ Handler = (*recorder)(nil)

func (r *recorder) Handle(_ context.Context, m conversation.Message) []conversation.Reply {
	r.mu.Lock()
	r.got = append(r.got, m)
	f := r.reply
	r.mu.Unlock()
	if f != nil {
		return f(m)
	}
	return []conversation.Reply{{Text: "ok: " + m.Text}}
}

func (r *recorder) messages() []conversation.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]conversation.Message(nil), r.got...)
}

func openStore(t testing.TB, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type env struct {
	api   *fakeAPI
	store store.Store
	h     *recorder
	logs  *deliverytest.LogBuffer
	log   zerolog.Logger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	log, buf := deliverytest.Logger()
	return &env{
		api:   newFakeAPI(t),
		store: openStore(t, filepath.Join(t.TempDir(), "herald.db")),
		h:     &recorder{},
		logs:  buf,
		log:   log,
	}
}

func (e *env) options(mode string) Options {
	return Options{
		Token:         testToken,
		APIURL:        e.api.srv.URL,
		Mode:          mode,
		WebhookSecret: testSecret,
		PublicURL:     "https://herald.example.com",
		Handler:       e.h,
		Store:         e.store,
		Holder:        "replica-a",
		Log:           e.log,
		PollTimeout:   2 * time.Second,
		LeaseTTL:      300 * time.Millisecond,
		Backoff:       10 * time.Millisecond,
	}
}

func (e *env) channel(t testing.TB, o Options) *Channel {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run starts c.Run and returns a stop function that waits for it.
func run(t *testing.T, c *Channel) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not stop after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func privateText(id int64, user int64, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764464400,"from":{"id":%d,"is_bot":false,"first_name":"Ada","language_code":"en"},"chat":{"id":%d,"type":"private","first_name":"Ada"},"text":%q}}`,
		id, id+1000, user, user, text)
}

func groupText(id int64, text, extra string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1764464400,"from":{"id":42,"is_bot":false,"first_name":"Ada","language_code":"zh-hans"},"chat":{"id":-1001234,"type":"supergroup","title":"Team"},"text":%q%s}}`,
		id, id+1000, text, extra)
}

func callback(id int64, user int64, chat int64, msgID int, data string) string {
	return fmt.Sprintf(`{"update_id":%d,"callback_query":{"id":"cb%d","from":{"id":%d,"is_bot":false,"first_name":"Grace","language_code":"en"},"message":{"message_id":%d,"date":1764464400,"from":{"id":%d,"is_bot":true,"first_name":"herald","username":"herald_bot"},"chat":{"id":%d,"type":"private"},"text":"Approve r-1?"},"chat_instance":"1","data":%q}}`,
		id, id, user, msgID, testBotID, chat, data)
}

func postHook(t testing.TB, h http.Handler, secret, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestDuplicateUpdateIDHandledOnce(t *testing.T) {
	t.Run("webhook retry", func(t *testing.T) {
		e := newEnv(t)
		c := e.channel(t, e.options(ModeWebhook))
		h := c.WebhookHandler()
		for range 3 {
			rec := postHook(t, h, testSecret, privateText(7, 501, "/tasks"))
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
				t.Fatalf("answer = %d %q, want 200 with an empty body", rec.Code, rec.Body.String())
			}
		}
		if n := len(e.h.messages()); n != 1 {
			t.Fatalf("handled %d times, want 1", n)
		}
		if n := len(e.api.callsTo("sendMessage")); n != 1 {
			t.Fatalf("%d replies, want 1", n)
		}
	})
	t.Run("polling, id seen again", func(t *testing.T) {
		e := newEnv(t)
		c := e.channel(t, e.options(ModePolling))
		run(t, c)
		e.api.push(privateText(7, 501, "/tasks"))
		waitFor(t, "first update confirmed", func() bool { return len(e.h.messages()) == 1 && e.api.unconfirmed() == 0 })
		// Telegram repeats an id (after idle weeks ids restart at random).
		e.api.push(privateText(7, 501, "/tasks"))
		e.api.push(privateText(8, 501, "/inbox"))
		waitFor(t, "second batch handled", func() bool { return len(e.h.messages()) >= 2 && e.api.unconfirmed() == 0 })
		got := e.h.messages()
		if len(got) != 2 || got[1].Text != "/inbox" {
			t.Fatalf("handled %+v, want /tasks then /inbox once each", got)
		}
	})
}

func TestWebhookWrongSecretIs401(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModeWebhook))
	h := c.WebhookHandler()
	for _, secret := range []string{"", "wrong", testSecret + "x", strings.ToUpper(testSecret)} {
		rec := postHook(t, h, secret, privateText(9, 501, "/help"))
		if rec.Code != http.StatusUnauthorized || rec.Body.Len() != 0 {
			t.Errorf("secret %q: answer = %d %q, want 401 and nothing else", secret, rec.Code, rec.Body.String())
		}
	}
	if n := len(e.h.messages()); n != 0 {
		t.Fatalf("handled %d updates with a wrong secret", n)
	}
	if n := len(e.api.calls); n != 0 {
		t.Fatalf("%d Bot API calls after a wrong secret, want none", n)
	}
	// The right secret is still accepted for the same update (not claimed).
	if rec := postHook(t, h, testSecret, privateText(9, 501, "/help")); rec.Code != http.StatusOK {
		t.Fatalf("right secret: %d", rec.Code)
	}
	if n := len(e.h.messages()); n != 1 {
		t.Fatalf("handled %d, want 1", n)
	}
	deliverytest.NoSecretInLogs(t, e.logs, testToken, testSecret)
}

func TestWebhookRejectsOtherMethodsAndBadBodies(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModeWebhook))
	h := c.WebhookHandler()
	req := httptest.NewRequest(http.MethodGet, WebhookPath, nil)
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", testSecret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	if rec := postHook(t, h, testSecret, `{"update_id":`); rec.Code != http.StatusBadRequest {
		t.Errorf("bad JSON: %d", rec.Code)
	}
	if rec := postHook(t, h, testSecret, `{"update_id":1,"message":{"text":"`+strings.Repeat("a", maxWebhookBody)+`"}}`); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d", rec.Code)
	}
}

// crashStore fails the offset write once armed: the process dies after
// handling a batch and before its acknowledgement is persisted or sent.
type crashStore struct {
	store.Store
	crash func()
}

func (s *crashStore) Channels() store.KV { return &crashKV{KV: s.Store.Channels(), crash: s.crash} }

type crashKV struct {
	store.KV
	crash func()
}

func (k *crashKV) Put(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if k.crash != nil {
		k.crash()
		return errors.New("process died")
	}
	return k.KV.Put(ctx, key, v, ttl)
}

func TestPollingRestartNeitherLosesNorRepeats(t *testing.T) {
	e := newEnv(t)
	// First life: handles update 10, then dies before the offset is
	// written and before the next getUpdates confirms it.
	ctx, cancel := context.WithCancel(context.Background())
	o := e.options(ModePolling)
	o.Store = &crashStore{Store: e.store, crash: cancel}
	first := e.channel(t, o)
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	e.api.push(privateText(10, 501, "/watch https://a.example.edu/feed"))
	<-done
	if n := len(e.h.messages()); n != 1 {
		t.Fatalf("first life handled %d updates, want 1", n)
	}
	if n := len(e.api.callsTo("sendMessage")); n != 1 {
		t.Fatalf("first life sent %d replies, want 1", n)
	}
	if e.api.unconfirmed() != 1 {
		t.Fatalf("update 10 was confirmed to Telegram before the crash")
	}
	// While down, another update arrives.
	e.api.push(privateText(11, 501, "/tasks"))

	// Second life on the same store: 10 comes back and is skipped, 11 is
	// handled, both are confirmed.
	second := e.channel(t, e.options(ModePolling))
	stop := run(t, second)
	waitFor(t, "both confirmed", func() bool { return e.api.unconfirmed() == 0 && len(e.h.messages()) >= 2 })
	stop()
	got := e.h.messages()
	if len(got) != 2 || got[1].Text != "/tasks" {
		t.Fatalf("handled %v, want update 10 once and update 11 once", texts(got))
	}
	if n := len(e.api.callsTo("sendMessage")); n != 2 {
		t.Fatalf("%d replies in all, want 2", n)
	}

	// Third life: the persisted offset asks only for what is new.
	before := len(e.api.callsTo("getUpdates"))
	third := e.channel(t, e.options(ModePolling))
	stop = run(t, third)
	waitFor(t, "third life polls", func() bool { return len(e.api.callsTo("getUpdates")) > before })
	stop()
	polls := e.api.callsTo("getUpdates")
	if off := polls[len(polls)-1].Params["offset"]; off != "12" {
		t.Fatalf("third life polled with offset %s, want 12", off)
	}
	if len(e.h.messages()) != 2 {
		t.Fatalf("third life handled something again")
	}
}

func texts(ms []conversation.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func TestPollingBatchKeepsChatOrder(t *testing.T) {
	e := newEnv(t)
	o := e.options(ModePolling)
	o.PollTimeout = DefaultPollTimeout // stopping must not wait for the long poll
	c := e.channel(t, o)
	for i := range 20 {
		e.api.push(privateText(int64(100+i), int64(501+i%3), fmt.Sprintf("/task t-%02d", i)))
	}
	run(t, c)
	waitFor(t, "all handled", func() bool { return len(e.h.messages()) == 20 && e.api.unconfirmed() == 0 })
	last := map[string]string{}
	for _, m := range e.h.messages() {
		if prev := last[m.Chat]; prev != "" && m.Text < prev {
			t.Fatalf("chat %s: %q handled after %q", m.Chat, m.Text, prev)
		}
		last[m.Chat] = m.Text
	}
}

func TestStandbyWhileAnotherReplicaPolls(t *testing.T) {
	e := newEnv(t)
	a := e.channel(t, e.options(ModePolling))
	stopA := run(t, a)
	waitFor(t, "a polls", func() bool { return a.Status() == "polling" })

	ob := e.options(ModePolling)
	ob.Holder = "replica-b"
	b := e.channel(t, ob)
	run(t, b)
	waitFor(t, "b stands by", func() bool { return b.Status() == StatusStandby })

	e.api.push(privateText(20, 501, "/help"))
	waitFor(t, "a handles", func() bool { return len(e.h.messages()) == 1 })
	if a.Status() != "polling" || b.Status() != StatusStandby {
		t.Fatalf("statuses a=%q b=%q", a.Status(), b.Status())
	}

	stopA() // a releases the lease; b takes over
	waitFor(t, "b polls", func() bool { return b.Status() == "polling" })
	e.api.push(privateText(21, 501, "/tasks"))
	waitFor(t, "b handles", func() bool { return len(e.h.messages()) == 2 })
}

func TestRetryingStatusAndPromptStop(t *testing.T) {
	cases := []struct {
		name   string
		method string
		code   int
		desc   string
		want   string
	}{
		{"unauthorized", "getMe", 401, "Unauthorized", "retrying: unauthorized"},
		{"webhook still set", "getUpdates", 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", "retrying: conflict"},
		{"server", "getUpdates", 502, "Bad Gateway", "retrying: server_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.api.on(tc.method, func(map[string]string) (int, string) { return apiFail(tc.code, tc.desc) })
			c := e.channel(t, e.options(ModePolling))
			stop := run(t, c)
			waitFor(t, tc.want, func() bool { return c.Status() == tc.want })
			stop()
			if c.Status() != "stopped" {
				t.Fatalf("status after stop = %q", c.Status())
			}
			deliverytest.NoSecretInLogs(t, e.logs, testToken, testSecret)
		})
	}
}

func TestI10_NoTokenInLogsOrErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	e := newEnv(t)
	o := e.options(ModePolling)
	o.APIURL = refused
	c := e.channel(t, o)
	stop := run(t, c)
	waitFor(t, "retrying", func() bool { return c.Status() == "retrying: network" })
	stop()
	err = c.Say(context.Background(), "telegram:chat:501", conversation.Reply{Text: "hello"})
	if err == nil || !errors.Is(err, ErrSend) {
		t.Fatalf("Say to a dead API = %v, want ErrSend", err)
	}
	if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "501") {
		t.Fatalf("error leaks a secret or recipient: %v", err)
	}
	deliverytest.NoSecretInLogs(t, e.logs, testToken, testSecret, "501")
}

func TestWebhookModeRegisters(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModeWebhook))
	run(t, c)
	waitFor(t, "webhook", func() bool { return c.Status() == "webhook" })
	hooks := e.api.callsTo("setWebhook")
	if len(hooks) != 1 {
		t.Fatalf("%d setWebhook calls", len(hooks))
	}
	p := hooks[0].Params
	if p["url"] != "https://herald.example.com/telegram/webhook" || p["secret_token"] != testSecret ||
		!strings.Contains(p["allowed_updates"], "callback_query") {
		t.Fatalf("setWebhook params = %v", p)
	}
	if n := len(e.api.callsTo("setMyCommands")); n != 2 {
		t.Fatalf("%d setMyCommands calls, want en and zh", n)
	}
	if n := len(e.api.callsTo("getUpdates")); n != 0 {
		t.Fatalf("webhook mode polled %d times", n)
	}
}

func TestGroupMessagesOnlyWhenAddressed(t *testing.T) {
	reply := `,"reply_to_message":{"message_id":5,"date":1764464400,"from":{"id":123456,"is_bot":true,"first_name":"herald","username":"herald_bot"},"chat":{"id":-1001234,"type":"supergroup"},"text":"watching 3 items"}`
	replyOther := `,"reply_to_message":{"message_id":5,"date":1764464400,"from":{"id":77,"is_bot":false,"first_name":"Bob"},"chat":{"id":-1001234,"type":"supergroup"},"text":"hi"}`
	mention := `,"entities":[{"type":"mention","offset":7,"length":11}]`
	textMention := `,"entities":[{"type":"text_mention","offset":0,"length":6,"user":{"id":123456,"is_bot":true,"first_name":"herald"}}]`
	cases := []struct {
		name, update string
		want         string // handled text; "" = ignored
	}{
		{"plain chatter", groupText(1, "lunch anyone?", ""), ""},
		{"bare command", groupText(2, "/tasks", ""), ""},
		{"command for us", groupText(3, "/tasks@herald_bot", ""), "/tasks@herald_bot"},
		{"command for us, any case", groupText(4, "/tasks@Herald_Bot all", ""), "/tasks@Herald_Bot all"},
		{"command for another bot", groupText(5, "/tasks@otherbot", ""), ""},
		{"leading mention", groupText(6, "@herald_bot /watch https://a.example.edu/f", ""), "/watch https://a.example.edu/f"},
		{"leading mention, other bot's command", groupText(7, "@herald_bot /tasks@otherbot", ""), ""},
		{"mention later", groupText(8, "hey 🙂 @herald_bot help", mention), "hey 🙂 @herald_bot help"},
		{"similar name", groupText(9, "@herald_bot2 /tasks", ""), ""},
		{"text mention", groupText(10, "herald what's up", textMention), "herald what's up"},
		{"reply to the bot", groupText(11, "stop that", reply), "stop that"},
		{"reply to someone else", groupText(12, "stop that", replyOther), ""},
		{"private chat", privateText(13, 501, "/tasks"), "/tasks"},
		{"private, other bot", privateText(14, 501, "/tasks@otherbot"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.channel(t, e.options(ModeWebhook))
			if rec := postHook(t, c.WebhookHandler(), testSecret, tc.update); rec.Code != http.StatusOK {
				t.Fatalf("answer %d", rec.Code)
			}
			got := e.h.messages()
			if tc.want == "" {
				if len(got) != 0 || len(e.api.callsTo("sendMessage")) != 0 {
					t.Fatalf("handled %v, want ignored", texts(got))
				}
				return
			}
			if len(got) != 1 || got[0].Text != tc.want || !got[0].Addressed {
				t.Fatalf("handled %+v, want %q", got, tc.want)
			}
		})
	}
}

func TestMessageMapping(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModeWebhook))
	postHook(t, c.WebhookHandler(), testSecret, groupText(3, "/tasks@herald_bot", ""))
	m := e.h.messages()[0]
	want := conversation.Message{Channel: "telegram", ID: "3", Principal: "telegram:42", Chat: "telegram:chat:-1001234",
		Group: true, Addressed: true, Text: "/tasks@herald_bot", Lang: "zh", Name: "Ada"}
	if m != want {
		t.Fatalf("message = %+v\nwant      %+v", m, want)
	}
	sends := e.api.callsTo("sendMessage")
	if len(sends) != 1 || sends[0].Params["chat_id"] != "-1001234" || sends[0].Params["parse_mode"] != "HTML" ||
		!strings.Contains(sends[0].Params["reply_parameters"], `"message_id":1003`) {
		t.Fatalf("reply = %+v", sends)
	}
	for _, tc := range []struct{ code, want string }{{"zh-hans", "zh"}, {"ZH", "zh"}, {"en", "en"}, {"de", "en"}, {"", ""}} {
		if got := lang(tc.code); got != tc.want {
			t.Errorf("lang(%q) = %q, want %q", tc.code, got, tc.want)
		}
	}
}

func TestSayEscapesSplitsAndAddsButtons(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModePolling))
	long := strings.Repeat("line <b>&\n", 500) // 5000 characters once escaped... and more
	err := c.Say(context.Background(), "telegram:chat:-100777", conversation.Reply{
		Text:    long,
		Buttons: []conversation.Button{{Label: "Approve", Action: "approve", Arg: "r-7f3a"}, {Label: "Reject", Action: "reject", Arg: "r-7f3a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sends := e.api.callsTo("sendMessage")
	if len(sends) < 2 {
		t.Fatalf("%d parts, want a split", len(sends))
	}
	for i, s := range sends {
		if s.Params["chat_id"] != "-100777" || s.Params["parse_mode"] != "HTML" {
			t.Fatalf("part %d params %v", i, s.Params)
		}
		if strings.Contains(s.Params["text"], "<b>") || strings.HasSuffix(s.Params["text"], "&") {
			t.Fatalf("part %d not escaped or cut inside an entity", i)
		}
		if n := len([]rune(s.Params["text"])); n > 4096 {
			t.Fatalf("part %d has %d characters", i, n)
		}
		if hasKB := s.Params["reply_markup"] != ""; hasKB != (i == len(sends)-1) {
			t.Fatalf("part %d keyboard = %q", i, s.Params["reply_markup"])
		}
	}
	kb := sends[len(sends)-1].Params["reply_markup"]
	if !strings.Contains(kb, `"callback_data":"approve:r-7f3a"`) || !strings.Contains(kb, `"callback_data":"reject:r-7f3a"`) {
		t.Fatalf("keyboard = %s", kb)
	}
	if err := c.Say(context.Background(), "feishu:chat:oc_1", conversation.Reply{Text: "x"}); !errors.Is(err, ErrNotTelegramChat) {
		t.Fatalf("Say to feishu = %v", err)
	}
}

func TestCallbackDataOver64BytesRefused(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModeWebhook))
	arg := strings.Repeat("x", MaxCallbackData-len("approve:")+1)
	for _, b := range []conversation.Button{{Label: "Approve", Action: "approve", Arg: arg}, {Label: "Empty"}} {
		err := c.Say(context.Background(), "telegram:chat:501", conversation.Reply{Text: "Approve?", Buttons: []conversation.Button{b}})
		if !errors.Is(err, ErrCallbackData) {
			t.Fatalf("button %q: Say = %v, want ErrCallbackData", b.Data(), err)
		}
	}
	if n := len(e.api.callsTo("sendMessage")); n != 0 {
		t.Fatalf("sent %d messages with bad buttons", n)
	}
	// Exactly 64 bytes is fine.
	ok := conversation.Button{Label: "Approve", Action: "approve", Arg: arg[1:]}
	if err := c.Say(context.Background(), "telegram:chat:501", conversation.Reply{Text: "Approve?", Buttons: []conversation.Button{ok}}); err != nil {
		t.Fatalf("64-byte data: %v", err)
	}
	// A press carrying more than 64 bytes is answered and not handled.
	rec := postHook(t, c.WebhookHandler(), testSecret, callback(30, 601, 601, 77, "approve:"+arg))
	if rec.Code != http.StatusOK {
		t.Fatalf("answer %d", rec.Code)
	}
	if n := len(e.h.messages()); n != 0 {
		t.Fatalf("handled a press with %d-byte data", len("approve:"+arg))
	}
	if n := len(e.api.callsTo("answerCallbackQuery")); n != 1 {
		t.Fatalf("%d callback answers, want 1", n)
	}
}

func TestButtonPressAnswersAndEdits(t *testing.T) {
	e := newEnv(t)
	e.h.reply = func(m conversation.Message) []conversation.Reply {
		return []conversation.Reply{{Text: "Approved r-1 <by Grace>", Edit: true, Toast: "Approved"}}
	}
	c := e.channel(t, e.options(ModeWebhook))
	e.api.seed(601, 77, "Approve r-1?", `{"inline_keyboard":[[{"text":"Approve","callback_data":"approve:r-1"}]]}`)
	rec := postHook(t, c.WebhookHandler(), testSecret, callback(31, 602, 601, 77, "approve:r-1"))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("answer %d %q", rec.Code, rec.Body.String())
	}
	got := e.h.messages()
	if len(got) != 1 || got[0].Button == nil {
		t.Fatalf("handled %+v", got)
	}
	want := conversation.Press{Action: "approve", Arg: "r-1", Ref: "telegram:chat:601:77"}
	if *got[0].Button != want || got[0].Principal != "telegram:602" || got[0].Chat != "telegram:chat:601" {
		t.Fatalf("press = %+v %+v", got[0], *got[0].Button)
	}
	answers := e.api.callsTo("answerCallbackQuery")
	if len(answers) != 1 || answers[0].Params["callback_query_id"] != "cb31" || answers[0].Params["text"] != "Approved" {
		t.Fatalf("answers = %+v", answers)
	}
	edits := e.api.callsTo("editMessageText")
	if len(edits) != 1 {
		t.Fatalf("%d edits", len(edits))
	}
	p := edits[0].Params
	if p["chat_id"] != "601" || p["message_id"] != "77" || p["text"] != "Approved r-1 &lt;by Grace&gt;" ||
		p["parse_mode"] != "HTML" || p["reply_markup"] != `{"inline_keyboard":[]}` {
		t.Fatalf("edit params = %v", p)
	}
	if n := len(e.api.callsTo("sendMessage")); n != 0 {
		t.Fatalf("%d new messages, want the edit only", n)
	}
	// Pressing again (a second admin, same outcome): the edit changes
	// nothing and Telegram says so; that is success.
	if err := c.edit(context.Background(), 601, 77, conversation.Reply{Text: "Approved r-1 <by Grace>", Edit: true}); err != nil {
		t.Fatalf("not-modified edit = %v, want success", err)
	}
	if n := len(e.api.callsTo("editMessageText")); n != 2 {
		t.Fatalf("%d edits", n)
	}
}

func TestNewValidates(t *testing.T) {
	h := &recorder{}
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"))
	cases := []struct {
		name string
		o    Options
		want error
	}{
		{"no token", Options{Handler: h, Store: s}, ErrNoToken},
		{"no handler", Options{Token: testToken, Store: s}, ErrNoHandler},
		{"no store", Options{Token: testToken, Handler: h}, ErrNoStore},
		{"bad mode", Options{Token: testToken, Handler: h, Store: s, Mode: "push"}, ErrBadMode},
		{"webhook without secret", Options{Token: testToken, Handler: h, Store: s, Mode: ModeWebhook, PublicURL: "https://h.example.com"}, ErrBadSecret},
		{"secret with bad characters", Options{Token: testToken, Handler: h, Store: s, Mode: ModeWebhook, PublicURL: "https://h.example.com", WebhookSecret: "a b"}, ErrBadSecret},
		{"webhook without public url", Options{Token: testToken, Handler: h, Store: s, Mode: ModeWebhook, WebhookSecret: testSecret}, ErrBadURL},
		{"bad api url", Options{Token: testToken, Handler: h, Store: s, APIURL: "ftp://x"}, ErrBadURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if !errors.Is(err, tc.want) {
				t.Fatalf("New = %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), testToken) {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  []string
	}{
		{"", 10, nil},
		{"short", 10, []string{"short"}},
		{"aaaa\nbbbb\ncccc", 9, []string{"aaaa\nbbbb", "cccc"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"ab&amp;cd", 6, []string{"ab", "&amp;c", "d"}},
		{"😀😀😀", 4, []string{"😀😀", "😀"}},
	}
	for _, tc := range cases {
		got := split(tc.in, tc.limit)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestReplyWaitsOutOneRateLimit(t *testing.T) {
	e := newEnv(t)
	c := e.channel(t, e.options(ModePolling))
	var waited []time.Duration
	c.wait = func(_ context.Context, d time.Duration) bool { waited = append(waited, d); return true }
	n := 0
	e.api.on("sendMessage", func(map[string]string) (int, string) {
		n++
		if n == 1 {
			return 429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`
		}
		if n == 3 {
			return 429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 60","parameters":{"retry_after":60}}`
		}
		return 0, ""
	})
	if err := c.Say(context.Background(), "telegram:chat:501", conversation.Reply{Text: "hello"}); err != nil {
		t.Fatalf("Say after one short rate limit = %v", err)
	}
	if len(waited) != 1 || waited[0] != 3*time.Second {
		t.Fatalf("waited %v, want 3s once", waited)
	}
	// A long wait is not sat out: the reply fails at once.
	if err := c.Say(context.Background(), "telegram:chat:501", conversation.Reply{Text: "again"}); !errors.Is(err, ErrSend) {
		t.Fatalf("Say under a long rate limit = %v, want ErrSend", err)
	}
	if len(waited) != 1 {
		t.Fatalf("waited %v", waited)
	}
}

func TestPressOnAMessageTooOldToEditSaysItAnew(t *testing.T) {
	e := newEnv(t)
	e.h.reply = func(conversation.Message) []conversation.Reply {
		return []conversation.Reply{{Text: "Approved r-1", Edit: true, Toast: "Approved"}}
	}
	c := e.channel(t, e.options(ModeWebhook))
	// Message 78 is unknown to the fake: "message to edit not found".
	if rec := postHook(t, c.WebhookHandler(), testSecret, callback(32, 602, 601, 78, "approve:r-1")); rec.Code != http.StatusOK {
		t.Fatalf("answer %d", rec.Code)
	}
	sends := e.api.callsTo("sendMessage")
	if len(sends) != 1 || sends[0].Params["chat_id"] != "601" || sends[0].Params["text"] != "Approved r-1" {
		t.Fatalf("sends = %+v", sends)
	}
}

// downDedup is a store whose dedup object is unreachable until healed.
type downDedup struct {
	store.Store
	mu   sync.Mutex
	down bool
}

func (s *downDedup) Dedup() store.Dedup { return &downMark{s} }

func (s *downDedup) heal() { s.mu.Lock(); s.down = false; s.mu.Unlock() }

type downMark struct{ s *downDedup }

func (d *downMark) Mark(ctx context.Context, ns, id string, ttl time.Duration) (bool, error) {
	d.s.mu.Lock()
	down := d.s.down
	d.s.mu.Unlock()
	if down {
		return false, fmt.Errorf("dedup: %w", store.ErrUnavailable)
	}
	return d.s.Store.Dedup().Mark(ctx, ns, id, ttl)
}

func TestUnclaimedUpdateIsOfferedAgain(t *testing.T) {
	t.Run("webhook answers 503", func(t *testing.T) {
		e := newEnv(t)
		o := e.options(ModeWebhook)
		ds := &downDedup{Store: e.store, down: true}
		o.Store = ds
		c := e.channel(t, o)
		if rec := postHook(t, c.WebhookHandler(), testSecret, privateText(40, 501, "/tasks")); rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("answer %d, want 503 so that Telegram retries", rec.Code)
		}
		if len(e.h.messages()) != 0 {
			t.Fatal("handled an unclaimed update")
		}
		ds.heal()
		if rec := postHook(t, c.WebhookHandler(), testSecret, privateText(40, 501, "/tasks")); rec.Code != http.StatusOK {
			t.Fatalf("retry answered %d", rec.Code)
		}
		if len(e.h.messages()) != 1 {
			t.Fatal("the retried update was not handled")
		}
	})
	t.Run("polling keeps it unconfirmed", func(t *testing.T) {
		e := newEnv(t)
		o := e.options(ModePolling)
		ds := &downDedup{Store: e.store, down: true}
		o.Store = ds
		c := e.channel(t, o)
		e.api.push(privateText(41, 501, "/tasks"))
		run(t, c)
		waitFor(t, "retrying: store", func() bool { return c.Status() == "retrying: store" })
		if e.api.unconfirmed() != 1 || len(e.h.messages()) != 0 {
			t.Fatalf("unconfirmed=%d handled=%d", e.api.unconfirmed(), len(e.h.messages()))
		}
		ds.heal()
		waitFor(t, "handled and confirmed", func() bool { return len(e.h.messages()) == 1 && e.api.unconfirmed() == 0 })
	})
}
