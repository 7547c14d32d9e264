package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/conversation"
)

func TestDecrypt_TestKeyVector(t *testing.T) {
	got, err := Decrypt("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello world" {
		t.Fatalf("decrypt = %q, want %q (padding must be removed)", got, "hello world")
	}
}

func TestDecrypt(t *testing.T) {
	sealed, err := Encrypt([]byte(`{"a":1}`), "k", []byte("fedcba9876543210"))
	if err != nil {
		t.Fatal(err)
	}
	// One whole block of padding when the plaintext fills its blocks.
	full, _ := Encrypt([]byte("0123456789abcdef"), "k", []byte("fedcba9876543210"))
	tests := []struct {
		name, in, key, want string
		err                 error
	}{
		{"round trip", sealed, "k", `{"a":1}`, nil},
		{"full block", full, "k", "0123456789abcdef", nil},
		{"wrong key", sealed, "other", "", ErrUndecryptable},
		{"not base64", "!!!", "k", "", ErrUndecryptable},
		{"iv only", "MDEyMzQ1Njc4OWFiY2RlZg==", "k", "", ErrUndecryptable},
		{"partial block", "MDEyMzQ1Njc4OWFiY2RlZjAxMg==", "k", "", ErrUndecryptable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decrypt(tt.in, tt.key)
			if tt.err != nil {
				// A wrong key yields garbage whose last byte is rarely valid
				// padding; either way it must not decode to the plaintext.
				if err == nil && string(got) == `{"a":1}` {
					t.Fatal("decrypted with the wrong key")
				}
				if err != nil && !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Decrypt = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestChallenge(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		r := newTestChannel(t, encrypted)
		plain := []byte(`{"challenge":"ajls384kdjx98XX","token":"` + testToken + `","type":"url_verification"}`)
		var w = r.postEvent(plain)
		if encrypted {
			// The platform may send the challenge unsigned.
			body, _ := seal(t, plain, testKey, r.now)
			w = r.post(body, nil)
		}
		if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"challenge":"ajls384kdjx98XX"}` {
			t.Fatalf("encrypted=%v: %d %s", encrypted, w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("content type %q", ct)
		}
		bad := []byte(`{"challenge":"ajls384kdjx98XX","token":"WRONG","type":"url_verification"}`)
		if w := r.postEvent(bad); w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "ajls") {
			t.Fatalf("encrypted=%v, wrong token: %d %s", encrypted, w.Code, w.Body)
		}
	}
}

func TestWrongVerificationTokenRefused(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		r := newTestChannel(t, encrypted)
		w := r.postEvent(messageEvent("WRONG", "ev-1", "om_1", chatP2P, "p2p", "/help"))
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("encrypted=%v: status %d, want 401", encrypted, w.Code)
		}
		if n := len(r.h.got()); n != 0 {
			t.Fatalf("handler ran %d times for a forged event", n)
		}
		if n := len(r.fake.sent()); n != 0 {
			t.Fatalf("%d replies sent for a forged event", n)
		}
		// The refused event was not marked: the genuine one still counts.
		if w := r.postEvent(messageEvent(testToken, "ev-1", "om_1", chatP2P, "p2p", "/help")); w.Code != http.StatusOK {
			t.Fatalf("genuine event: %d", w.Code)
		}
		if n := len(r.h.got()); n != 1 {
			t.Fatalf("genuine event handled %d times", n)
		}
	}
}

func TestSignatureChecked(t *testing.T) {
	plain := messageEvent(testToken, "ev-sig", "om_sig", chatP2P, "p2p", "/tasks")
	tests := []struct {
		name   string
		mutate func(body []byte, h map[string]string, now time.Time) []byte
		want   int
	}{
		{"valid", func(b []byte, h map[string]string, _ time.Time) []byte { return b }, http.StatusOK},
		{"wrong signature", func(b []byte, h map[string]string, _ time.Time) []byte {
			h["X-Lark-Signature"] = strings.Repeat("0", 64)
			return b
		}, http.StatusUnauthorized},
		{"body changed", func(b []byte, h map[string]string, _ time.Time) []byte {
			return append(b, ' ')
		}, http.StatusUnauthorized},
		{"missing signature", func(b []byte, h map[string]string, _ time.Time) []byte {
			delete(h, "X-Lark-Signature")
			return b
		}, http.StatusUnauthorized},
		{"stale", func(b []byte, h map[string]string, now time.Time) []byte {
			resign(h, b, now.Add(-SignatureTolerance-time.Second))
			return b
		}, http.StatusUnauthorized},
		{"future", func(b []byte, h map[string]string, now time.Time) []byte {
			resign(h, b, now.Add(SignatureTolerance+time.Second))
			return b
		}, http.StatusUnauthorized},
		{"edge of tolerance", func(b []byte, h map[string]string, now time.Time) []byte {
			resign(h, b, now.Add(-SignatureTolerance))
			return b
		}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestChannel(t, true)
			body, h := seal(t, plain, testKey, r.now)
			body = tt.mutate(body, h, r.now)
			w := r.post(body, h)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.want == http.StatusOK]; len(r.h.got()) != want {
				t.Fatalf("handled %d times, want %d", len(r.h.got()), want)
			}
		})
	}
}

// resign signs body again with a timestamp at.
func resign(h map[string]string, body []byte, at time.Time) {
	tsStr := strconv.FormatInt(at.Unix(), 10)
	h["X-Lark-Request-Timestamp"] = tsStr
	h["X-Lark-Signature"] = Signature(tsStr, h["X-Lark-Request-Nonce"], testKey, body)
}

func TestEncryptedMessageHandled(t *testing.T) {
	r := newTestChannel(t, true)
	w := r.postEvent(messageEvent(testToken, "ev-enc", "om_enc", chatP2P, "p2p", "/watch https://news.example.edu/feed.xml every 30m"))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got := r.h.got()
	if len(got) != 1 {
		t.Fatalf("handled %d turns, want 1", len(got))
	}
	want := conversation.Message{
		Channel: "feishu", ID: "om_enc", Principal: "feishu:" + aliceOpenID, Chat: "feishu:chat:" + chatP2P,
		Addressed: true, Text: "/watch https://news.example.edu/feed.xml every 30m",
	}
	if got[0] != want {
		t.Fatalf("message\n got %+v\nwant %+v", got[0], want)
	}
	sent := r.fake.sent()
	if len(sent) != 1 || sent[0].IDType != "chat_id" || sent[0].ReceiveID != chatP2P || sent[0].MsgType != "text" {
		t.Fatalf("sent %+v", sent)
	}
	var content map[string]string
	if err := json.Unmarshal([]byte(sent[0].Content), &content); err != nil || content["text"] != "echo: "+want.Text {
		t.Fatalf("content %q", sent[0].Content)
	}
}

func TestRedeliveredEventHandledOnce(t *testing.T) {
	r := newTestChannel(t, false)
	ev := messageEvent(testToken, "ev-dup", "om_dup", chatP2P, "p2p", "/tasks")
	for i := 0; i < 3; i++ {
		if w := r.postEvent(ev); w.Code != http.StatusOK {
			t.Fatalf("delivery %d: status %d", i, w.Code)
		}
	}
	// A re-push under a new event id of the same message is the same turn.
	if w := r.postEvent(messageEvent(testToken, "ev-dup-2", "om_dup", chatP2P, "p2p", "/tasks")); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if n := len(r.h.got()); n != 1 {
		t.Fatalf("handled %d times, want 1", n)
	}
	if n := len(r.fake.sent()); n != 1 {
		t.Fatalf("replied %d times, want 1", n)
	}
}

func TestCardPress(t *testing.T) {
	// A default language is for text that does not tell; a press is
	// answered in its presser's language, which the core knows.
	r := newTestChannel(t, true, func(o *Options) { o.DefaultLang = "zh" })
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		return []conversation.Reply{
			{Text: "Approved r-7f3a: watching news.example.edu", Edit: true, Toast: "Approved"},
			{Text: "Requester told."},
		}
	}
	w := r.postEvent(cardEvent(testToken, "ev-card", "ou_admin0000000000000000000000001", chatGroup, "om_card", map[string]string{"action": "approve", "arg": "r-7f3a"}))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got := r.h.got()
	if len(got) != 1 || got[0].Button == nil {
		t.Fatalf("turns %+v", got)
	}
	m := got[0]
	if *m.Button != (conversation.Press{Action: "approve", Arg: "r-7f3a", Ref: "om_card"}) ||
		m.Principal != "feishu:ou_admin0000000000000000000000001" || m.Chat != "feishu:chat:"+chatGroup || !m.Addressed || m.Lang != "" {
		t.Fatalf("press message %+v %+v", m, *m.Button)
	}
	var resp struct {
		Toast struct{ Type, Content string }
		Card  struct {
			Type string
			Data json.RawMessage
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Toast.Content != "Approved" || resp.Toast.Type != "info" {
		t.Errorf("toast %+v", resp.Toast)
	}
	if resp.Card.Type != "raw" || !strings.Contains(string(resp.Card.Data), "Approved r-7f3a") || strings.Contains(string(resp.Card.Data), `"action"`) {
		t.Errorf("card %s %s", resp.Card.Type, resp.Card.Data)
	}
	// The reply that is not the edit goes out as a message to the chat.
	sent := r.fake.sent()
	if len(sent) != 1 || !strings.Contains(sent[0].Content, "Requester told.") || sent[0].ReceiveID != chatGroup {
		t.Fatalf("sent %+v", sent)
	}
	// A re-pushed press is answered without a second turn.
	if w := r.postEvent(cardEvent(testToken, "ev-card", "ou_admin0000000000000000000000001", chatGroup, "om_card", map[string]string{"action": "approve", "arg": "r-7f3a"})); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "{}" {
		t.Fatalf("re-push: %d %s", w.Code, w.Body)
	}
	if n := len(r.h.got()); n != 1 {
		t.Fatalf("press handled %d times", n)
	}
}

func TestCardPressInvalidValue(t *testing.T) {
	r := newTestChannel(t, false)
	for i, v := range []map[string]string{
		{"action": "Approve; drop", "arg": "r-1"},
		{"arg": "r-1"},
		{"action": "approve", "arg": strings.Repeat("x", 65)},
	} {
		w := r.postEvent(cardEvent(testToken, "ev-bad-"+strconv.Itoa(i), "ou_x", chatGroup, "om_c", v))
		if w.Code != http.StatusOK {
			t.Fatalf("%v: status %d", v, w.Code)
		}
	}
	if n := len(r.h.got()); n != 0 {
		t.Fatalf("invalid presses reached the handler %d times", n)
	}
}

func TestGroupMessages(t *testing.T) {
	r := newTestChannel(t, false)
	// Mentions someone else only: not for the bot.
	r.postEvent(messageEvent(testToken, "ev-g1", "om_g1", chatGroup, "group", "@_user_1 please look at /tasks",
		mention{"@_user_1", "ou_bob0000000000000000000000000001", "Bob"}))
	// No mention at all.
	r.postEvent(messageEvent(testToken, "ev-g2", "om_g2", chatGroup, "group", "/tasks"))
	if n := len(r.h.got()); n != 0 {
		t.Fatalf("group messages without the bot's mention handled %d times", n)
	}
	if n := len(r.fake.sent()); n != 0 {
		t.Fatalf("%d replies to unaddressed group messages", n)
	}
	r.postEvent(messageEvent(testToken, "ev-g3", "om_g3", chatGroup, "group", "@_user_1 /watch https://a.example.edu/x @_user_2 看一下",
		mention{"@_user_1", botOpenID, "herald"}, mention{"@_user_2", "ou_bob0000000000000000000000000001", "Bob"}))
	got := r.h.got()
	if len(got) != 1 {
		t.Fatalf("handled %d, want 1", len(got))
	}
	if m := got[0]; !m.Group || !m.Addressed || m.Text != "/watch https://a.example.edu/x @Bob 看一下" || m.Lang != "zh" {
		t.Fatalf("group message %+v", m)
	}
}

func TestNonTextAndBotSendersIgnored(t *testing.T) {
	r := newTestChannel(t, false)
	ev := messageEvent(testToken, "ev-img", "om_img", chatP2P, "p2p", "x")
	ev = []byte(strings.Replace(string(ev), `"message_type":"text"`, `"message_type":"image"`, 1))
	if w := r.postEvent(ev); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	ev = messageEvent(testToken, "ev-app", "om_app", chatP2P, "p2p", "/help")
	ev = []byte(strings.Replace(string(ev), `"sender_type":"user"`, `"sender_type":"app"`, 1))
	if w := r.postEvent(ev); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if n := len(r.h.got()); n != 0 {
		t.Fatalf("handled %d", n)
	}
}

func TestUnknownEventAcknowledged(t *testing.T) {
	r := newTestChannel(t, false)
	ev := strings.Replace(string(messageEvent(testToken, "ev-u", "om_u", chatP2P, "p2p", "x")), "im.message.receive_v1", "im.chat.updated_v1", 1)
	if w := r.postEvent([]byte(ev)); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	for _, body := range []string{"", "{", `{"encrypt":"abc"}`} {
		if w := r.post([]byte(body), nil); w.Code == http.StatusOK {
			t.Fatalf("%q answered 200", body)
		}
	}
}

func TestTurnsSerialisedPerChat(t *testing.T) {
	r := newTestChannel(t, false)
	release := make(chan struct{})
	var order []string
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		if m.Text == "first" {
			<-release
		}
		order = append(order, m.Text) // serialised per chat: no race
		return nil
	}
	h := r.ch.EventHandler()
	for i, text := range []string{"first", "second", "third"} {
		req, _ := http.NewRequest(http.MethodPost, "/feishu/events", strings.NewReader(string(messageEvent(testToken, "ev-o"+text, "om_o"+strconv.Itoa(i), chatP2P, "p2p", text))))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req) // answered before the first turn ends
		if w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
	}
	close(release)
	r.ch.chats.wait()
	if strings.Join(order, ",") != "first,second,third" {
		t.Fatalf("order %v", order)
	}
}

func TestRunWebhookModeStops(t *testing.T) {
	r := newTestChannel(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := r.postEvent(messageEvent(testToken, "ev-late", "om_late", chatP2P, "p2p", "/help")); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("event after stop: %d, want 503", w.Code)
	}
	if r.ch.Status() != "stopped" {
		t.Fatalf("status %q", r.ch.Status())
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"no credentials", Options{Handler: &fakeHandler{}}},
		{"webhook without token", Options{AppID: "a", AppSecret: "b", Mode: ModeWebhook, Handler: &fakeHandler{}}},
		{"bad mode", Options{AppID: "a", AppSecret: "b", Mode: "poll", Handler: &fakeHandler{}}},
		{"bad base url", Options{AppID: "a", AppSecret: "b", BaseURL: "ftp://x", Handler: &fakeHandler{}}},
		{"no handler", Options{AppID: "a", AppSecret: "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
}

func TestCardPressTooSlowAnswersLater(t *testing.T) {
	r := newTestChannel(t, false)
	r.ch.cardWait = time.Nanosecond
	release := make(chan struct{})
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		<-release // still deciding when the platform must be answered
		return []conversation.Reply{{Text: "Approved r-1", Edit: true, Toast: "Approved"}}
	}
	req := httptest.NewRequest(http.MethodPost, "/feishu/events", strings.NewReader(string(
		cardEvent(testToken, "ev-slow", "ou_admin", chatGroup, "om_card", map[string]string{"action": "approve", "arg": "r-1"}))))
	w := httptest.NewRecorder()
	r.ch.EventHandler().ServeHTTP(w, req)
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "{}" {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	close(release)
	r.ch.chats.wait()
	// The decision could not replace the card: it is said in the chat.
	sent := r.fake.sent()
	if len(sent) != 1 || sent[0].ReceiveID != chatGroup || !strings.Contains(sent[0].Content, "Approved r-1") {
		t.Fatalf("sent %+v", sent)
	}
}

func TestRunDrainsQueuedTurns(t *testing.T) {
	r := newTestChannel(t, false)
	if r.ch.Status() != "on (webhook)" {
		t.Fatalf("status %q", r.ch.Status())
	}
	release := make(chan struct{})
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		if m.Text == "first" {
			<-release
		}
		return []conversation.Reply{{Text: "done " + m.Text}}
	}
	for i, text := range []string{"first", "second"} {
		req := httptest.NewRequest(http.MethodPost, "/feishu/events", strings.NewReader(string(
			messageEvent(testToken, "ev-d"+text, "om_d"+strconv.Itoa(i), chatP2P, "p2p", text))))
		w := httptest.NewRecorder()
		r.ch.EventHandler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ch.Run(ctx) }()
	cancel()
	waitFor(t, "stopped status", func() bool { return r.ch.Status() == "stopped" })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Both acknowledged turns ran and answered before Run returned.
	if n := len(r.fake.sent()); n != 2 {
		t.Fatalf("sent %d after shutdown, want 2", n)
	}
}

// TestI10_MessageCarryingASecretIsRecalledOrThePersonAsked: a reply that
// retracts the message it answers makes the channel recall that message;
// the platform refuses a bot's recall of a person's message in a private
// chat, so the person is asked to recall it, and the reply still goes.
func TestI10_MessageCarryingASecretIsRecalledOrThePersonAsked(t *testing.T) {
	r := newTestChannel(t, false)
	r.h.answer = func(m conversation.Message) []conversation.Reply {
		return []conversation.Reply{{Text: "Token stored.", Retract: true, Unretracted: "Please recall that message."}}
	}
	if w := r.postEvent(messageEvent(testToken, "ev-tok", "om_usertoken1", chatP2P, "p2p", "7~TokenValueXyz123456")); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if got := r.fake.recalled(); len(got) != 1 || got[0] != "om_usertoken1" {
		t.Fatalf("recalls %v, want the token's message", got)
	}
	var texts []string
	for _, s := range r.fake.sent() {
		texts = append(texts, s.Content)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "Please recall that message.") || !strings.Contains(all, "Token stored.") || strings.Contains(all+r.logs.String(), "TokenValue") {
		t.Fatalf("sent %s\nlogs %s", all, r.logs.String())
	}
}
