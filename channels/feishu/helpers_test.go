package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	sink "github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/store/bolt"
)

const (
	testSecret  = "app-s3cret-VALUE-77aa"
	testToken   = "vt-verification-TOKEN-41"
	testKey     = "ek-encrypt-KEY-0c9d"
	botOpenID   = "ou_bot000000000000000000000000001"
	aliceOpenID = "ou_alice0000000000000000000000001"
	chatP2P     = "oc_p2p0000000000000000000000000001"
	chatGroup   = "oc_grp0000000000000000000000000001"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

var appSeq atomic.Int64

// newAppID returns a distinct app id per test.
func newAppID() string { return fmt.Sprintf("cli_chan%06d", appSeq.Add(1)) }

// sent is one message the fake platform accepted.
type sent struct {
	IDType, ReceiveID, MsgType, Content, UUID string
}

// fakeFeishu speaks the open platform's wire format: the tenant token
// endpoint, bot info and im/v1/messages with a Bearer check.
type fakeFeishu struct {
	t     testing.TB
	srv   *httptest.Server
	appID string

	mu         sync.Mutex
	tokenCalls int
	valid      map[string]bool
	messages   []sent
	// wsURL is the long connection's address the endpoint hands out; ""
	// refuses the app (a client error).
	wsURL string
	// rejectNextToken makes the next message call answer 99991663 and
	// forget its token, as the platform does for a revoked token.
	rejectNextToken bool
	// recalls are the message ids a recall (DELETE) was asked for.
	recalls []string
	// files are the message resources the fake serves, by message id and
	// file key ("om_1/file_v2_x"); downloads counts their fetches.
	files     map[string][]byte
	downloads int
}

func newFake(t testing.TB, appID string) *fakeFeishu {
	f := &fakeFeishu{t: t, appID: appID, valid: map[string]bool{}, files: map[string][]byte{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func fakeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Tt-Logid", "20261130080000TEST")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeFeishu) bearer(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	return ok && f.valid[tok]
}

func (f *fakeFeishu) handle(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/open-apis/im/v1/messages/"); ok && strings.Contains(rest, "/resources/") {
		f.resource(w, r, strings.Replace(rest, "/resources/", "/", 1))
		return
	}
	switch r.URL.Path {
	case sink.TokenPath:
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokenCalls++
		if r.Method != http.MethodPost || in["app_id"] != f.appID || in["app_secret"] != testSecret {
			fakeJSON(w, 400, `{"code":10014,"msg":"app secret invalid"}`)
			return
		}
		tok := fmt.Sprintf("t-g1044%04d", f.tokenCalls)
		f.valid[tok] = true
		fakeJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"ok","tenant_access_token":%q,"expire":7200}`, tok))
	case botInfoPath:
		if !f.bearer(r) {
			fakeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
			return
		}
		fakeJSON(w, 200, `{"code":0,"msg":"ok","bot":{"activate_status":2,"app_name":"herald","open_id":"`+botOpenID+`"}}`)
	case "/open-apis/im/v1/messages":
		f.message(w, r)
	case "/callback/ws/endpoint":
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		u := f.wsURL
		f.mu.Unlock()
		if u == "" || in["AppID"] != f.appID || in["AppSecret"] != testSecret {
			fakeJSON(w, 200, `{"code":10003,"msg":"invalid app_id or app_secret"}`)
			return
		}
		fakeJSON(w, 200, `{"code":0,"msg":"ok","data":{"URL":"`+u+`","ClientConfig":{"ReconnectCount":0,"ReconnectInterval":1,"ReconnectNonce":0,"PingInterval":120}}}`)
	default:
		if id, ok := strings.CutPrefix(r.URL.Path, "/open-apis/im/v1/messages/"); ok && r.Method == http.MethodDelete {
			f.recall(w, r, id)
			return
		}
		fakeJSON(w, 404, `{"code":404,"msg":"404 page not found"}`)
	}
}

// recall answers DELETE im/v1/messages/:id as the platform does for a
// bot: its own messages are recalled, a person's message (in a chat the
// bot does not administer) is refused.
func (f *fakeFeishu) recall(w http.ResponseWriter, r *http.Request, id string) {
	if !f.bearer(r) {
		fakeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
		return
	}
	f.mu.Lock()
	f.recalls = append(f.recalls, id)
	n := len(f.messages)
	f.mu.Unlock()
	var own bool
	for i := 1; i <= n; i++ {
		own = own || id == fmt.Sprintf("om_%04d", i)
	}
	if !own {
		fakeJSON(w, 400, `{"code":230026,"msg":"No permission to recall this message."}`)
		return
	}
	fakeJSON(w, 200, `{"code":0,"msg":"success","data":{}}`)
}

func (f *fakeFeishu) recalled() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.recalls...)
}

func (f *fakeFeishu) message(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		fakeJSON(w, 400, `{"code":9499,"msg":"Bad Request"}`)
		return
	}
	if !f.bearer(r) {
		fakeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
		return
	}
	f.mu.Lock()
	if f.rejectNextToken {
		f.rejectNextToken = false
		f.valid = map[string]bool{}
		f.mu.Unlock()
		fakeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
		return
	}
	f.mu.Unlock()
	var body struct {
		ReceiveID string `json:"receive_id"`
		MsgType   string `json:"msg_type"`
		Content   string `json:"content"`
		UUID      string `json:"uuid"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.ReceiveID == "" || !json.Valid([]byte(body.Content)) {
		fakeJSON(w, 400, `{"code":230001,"msg":"invalid receive_id or content"}`)
		return
	}
	idType := r.URL.Query().Get("receive_id_type")
	if body.ReceiveID == "oc_notmember" {
		fakeJSON(w, 400, `{"code":230002,"msg":"Bot/User can NOT be out of the chat. receive_id oc_notmember"}`)
		return
	}
	f.mu.Lock()
	f.messages = append(f.messages, sent{IDType: idType, ReceiveID: body.ReceiveID, MsgType: body.MsgType, Content: body.Content, UUID: body.UUID})
	n := len(f.messages)
	f.mu.Unlock()
	fakeJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"success","data":{"message_id":"om_%04d","chat_id":%q,"msg_type":%q}}`, n, body.ReceiveID, body.MsgType))
}

// resource serves a message's file as the platform does: the bytes, or a
// JSON error.
func (f *fakeFeishu) resource(w http.ResponseWriter, r *http.Request, key string) {
	if r.Method != http.MethodGet || r.URL.Query().Get("type") != "file" {
		fakeJSON(w, 400, `{"code":234001,"msg":"Invalid request param."}`)
		return
	}
	if !f.bearer(r) {
		fakeJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
		return
	}
	f.mu.Lock()
	data, ok := f.files[key]
	f.downloads++
	f.mu.Unlock()
	if !ok {
		fakeJSON(w, 400, `{"code":234003,"msg":"File not in msg."}`)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

func (f *fakeFeishu) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.messages...)
}

// fakeHandler stands in for the conversation core: it records turns and
// answers with what answer returns (default: echo the text).
type fakeHandler struct {
	mu     sync.Mutex
	turns  []conversation.Message
	answer func(m conversation.Message) []conversation.Reply
}

var _ Handler = (*fakeHandler)(nil)

func (h *fakeHandler) Handle(_ context.Context, m conversation.Message) []conversation.Reply {
	h.mu.Lock()
	h.turns = append(h.turns, m)
	answer := h.answer
	h.mu.Unlock()
	if answer != nil {
		return answer(m)
	}
	return []conversation.Reply{{Text: "echo: " + m.Text}}
}

func (h *fakeHandler) got() []conversation.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]conversation.Message(nil), h.turns...)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testRig is a channel on a real bbolt store, wired to a fake platform.
type testRig struct {
	t    testing.TB
	ch   *Channel
	fake *fakeFeishu
	h    *fakeHandler
	logs *syncBuffer
	now  time.Time
}

// newTestChannel builds a webhook-mode channel; encrypted selects an
// encrypt key.
func newTestChannel(t testing.TB, encrypted bool, configure ...func(*Options)) *testRig {
	t.Helper()
	appID := newAppID()
	r := &testRig{t: t, fake: newFake(t, appID), h: &fakeHandler{}, logs: &syncBuffer{}, now: t0}
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o := Options{
		AppID: appID, AppSecret: testSecret, Mode: ModeWebhook, VerificationToken: testToken,
		BaseURL: r.fake.srv.URL, Handler: r.h, Store: st,
		Log: zerolog.New(r.logs).Level(zerolog.DebugLevel), HTTPClient: r.fake.srv.Client(),
		Now: func() time.Time { return r.now },
	}
	if encrypted {
		o.EncryptKey = testKey
	}
	for _, c := range configure {
		c(&o)
	}
	r.ch, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.ch.chats.wait()
		r.assertNoSecrets()
	})
	return r
}

// assertNoSecrets checks that the logs hold no secret, token or chat id
// (I10).
func (r *testRig) assertNoSecrets() {
	r.t.Helper()
	logs := r.logs.String()
	for _, s := range []string{testSecret, testToken, testKey, "t-g1044", chatP2P, chatGroup, aliceOpenID} {
		if strings.Contains(logs, s) {
			r.t.Errorf("logs contain a secret or address %q:\n%s", s, logs)
		}
	}
}

// post sends body to the event endpoint with headers and waits until
// every turn it queued has run.
func (r *testRig) post(body []byte, h map[string]string) *httptest.ResponseRecorder {
	r.t.Helper()
	return r.serve(body, h)
}

// serve is post without test bookkeeping (usable inside fuzz targets).
func (r *testRig) serve(body []byte, h map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/feishu/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.ch.EventHandler().ServeHTTP(w, req)
	r.ch.chats.wait()
	return w
}

// postEvent sends plain (a plaintext event) the way the platform would:
// encrypted and signed when the channel has an encrypt key.
func (r *testRig) postEvent(plain []byte) *httptest.ResponseRecorder {
	r.t.Helper()
	if r.ch.o.EncryptKey == "" {
		return r.post(plain, nil)
	}
	body, h := seal(r.t, plain, r.ch.o.EncryptKey, r.now)
	return r.post(body, h)
}

// seal encrypts and signs plain as the platform does.
func seal(t testing.TB, plain []byte, key string, at time.Time) ([]byte, map[string]string) {
	t.Helper()
	enc, err := Encrypt(plain, key, []byte("0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"encrypt": enc})
	ts := strconv.FormatInt(at.Unix(), 10)
	nonce := "n-" + ts
	return body, map[string]string{
		"X-Lark-Request-Timestamp": ts,
		"X-Lark-Request-Nonce":     nonce,
		"X-Lark-Signature":         Signature(ts, nonce, key, body),
	}
}

// mention is one entry of a message's mentions.
type mention struct{ key, openID, name string }

// messageEvent builds an im.message.receive_v1 event as the platform sends it.
func messageEvent(token, eventID, messageID, chatID, chatType, text string, ms ...mention) []byte {
	content, _ := json.Marshal(map[string]string{"text": text})
	var mentions []map[string]any
	for _, m := range ms {
		mentions = append(mentions, map[string]any{
			"key": m.key, "id": map[string]string{"open_id": m.openID, "union_id": "on_x", "user_id": ""},
			"name": m.name, "tenant_key": "736588c9260f175d",
		})
	}
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]string{
			"event_id": eventID, "event_type": "im.message.receive_v1", "create_time": "1796025600000",
			"token": token, "app_id": "cli_x", "tenant_key": "736588c9260f175d",
		},
		"event": map[string]any{
			"sender": map[string]any{
				"sender_id":   map[string]string{"open_id": aliceOpenID, "union_id": "on_alice", "user_id": ""},
				"sender_type": "user", "tenant_key": "736588c9260f175d",
			},
			"message": map[string]any{
				"message_id": messageID, "root_id": "", "parent_id": "", "create_time": "1796025600000",
				"update_time": "1796025600000", "chat_id": chatID, "chat_type": chatType,
				"message_type": "text", "content": string(content), "mentions": mentions,
			},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// cardEvent builds a card.action.trigger callback for a button press.
func cardEvent(token, eventID, operator, chatID, messageID string, value map[string]string) []byte {
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]string{
			"event_id": eventID, "event_type": "card.action.trigger", "create_time": "1796025600000000",
			"token": token, "app_id": "cli_x", "tenant_key": "736588c9260f175d",
		},
		"event": map[string]any{
			"operator": map[string]any{"tenant_key": "736588c9260f175d", "open_id": operator, "union_id": "on_op"},
			"token":    "c-a1b2c3",
			"action":   map[string]any{"value": value, "tag": "button"},
			"host":     "im_message",
			"context":  map[string]string{"open_message_id": messageID, "open_chat_id": chatID},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}
