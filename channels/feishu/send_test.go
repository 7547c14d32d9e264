package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/conversation"
	sink "github.com/herald-bridge/herald/delivery/feishu"
)

func TestSay(t *testing.T) {
	r := newTestChannel(t, false)
	ctx := context.Background()
	prompt := conversation.Reply{Text: "Request r-7f3a from feishu:ou_x", Buttons: []conversation.Button{
		{Label: "Approve", Action: "approve", Arg: "r-7f3a"}, {Label: "Reject", Action: "reject", Arg: "r-7f3a"},
	}}
	if err := r.ch.Say(ctx, "feishu:user:"+aliceOpenID, prompt); err != nil {
		t.Fatal(err)
	}
	if err := r.ch.Say(ctx, "feishu:chat:"+chatGroup, conversation.Reply{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := r.ch.Say(ctx, "feishu:chat:"+chatGroup, conversation.Reply{Toast: "toast only"}); err != nil {
		t.Fatal(err)
	}
	sent := r.fake.sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want 2", len(sent))
	}
	card := sent[0]
	if card.IDType != "open_id" || card.ReceiveID != aliceOpenID || card.MsgType != "interactive" || card.UUID == "" {
		t.Fatalf("card message %+v", card)
	}
	var c struct {
		Elements []struct {
			Tag     string
			Actions []struct {
				Type  string
				Text  struct{ Content string }
				Value map[string]string
			}
		}
	}
	if err := json.Unmarshal([]byte(card.Content), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Elements) != 2 || len(c.Elements[1].Actions) != 2 {
		t.Fatalf("card %s", card.Content)
	}
	a := c.Elements[1].Actions
	if a[0].Value["action"] != "approve" || a[0].Value["arg"] != "r-7f3a" || a[0].Type != "primary" || a[1].Type != "danger" || a[1].Text.Content != "Reject" {
		t.Fatalf("buttons %+v", a)
	}
	if text := sent[1]; text.IDType != "chat_id" || text.ReceiveID != chatGroup || text.MsgType != "text" || text.Content != `{"text":"hello"}` {
		t.Fatalf("text message %+v", text)
	}
}

func TestSayRenewsRevokedToken(t *testing.T) {
	r := newTestChannel(t, false)
	ctx := context.Background()
	if err := r.ch.Say(ctx, "feishu:chat:"+chatP2P, conversation.Reply{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	r.fake.mu.Lock()
	r.fake.rejectNextToken = true
	r.fake.mu.Unlock()
	if err := r.ch.Say(ctx, "feishu:chat:"+chatP2P, conversation.Reply{Text: "two"}); err != nil {
		t.Fatal(err)
	}
	r.fake.mu.Lock()
	calls := r.fake.tokenCalls
	r.fake.mu.Unlock()
	if calls != 2 {
		t.Fatalf("token fetched %d times, want 2", calls)
	}
	if n := len(r.fake.sent()); n != 2 {
		t.Fatalf("sent %d, want 2", n)
	}
}

func TestSayErrors(t *testing.T) {
	r := newTestChannel(t, false)
	ctx := context.Background()
	tests := []struct {
		chat string
		want error
	}{
		{"telegram:chat:1", ErrBadChat},
		{"feishu:chat:", ErrBadChat},
		{"feishu:chat:oc_notmember", ErrUnreachable},
	}
	for _, tt := range tests {
		err := r.ch.Say(ctx, tt.chat, conversation.Reply{Text: "x"})
		if !errors.Is(err, tt.want) {
			t.Fatalf("%s: err = %v, want %v", tt.chat, err, tt.want)
		}
		// Errors may be shown or logged: no chat id, token or secret (I10).
		for _, s := range []string{"oc_notmember", testSecret, "t-g1044"} {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("error %q contains %q", err, s)
			}
		}
	}
	// Wrong credentials: classified, without the secret.
	o := r.ch.o
	r.ch.tokens = sink.NewTokenSource(o.AppID, "wrong-"+testSecret, o.BaseURL, o.HTTPClient, o.Now)
	err := r.ch.Say(ctx, "feishu:chat:"+chatP2P, conversation.Reply{Text: "x"})
	if !errors.Is(err, ErrTokenRejected) || strings.Contains(err.Error(), testSecret) {
		t.Fatalf("err = %v", err)
	}
}

func TestResolveMentions(t *testing.T) {
	bot := mention{"@_user_1", botOpenID, "herald"}
	bob := mention{"@_user_2", "ou_bob", "Bob"}
	ten := mention{"@_user_10", "ou_ten", "Ten"}
	tests := []struct {
		name, text string
		ms         []mention
		botID      string
		want       string
		mentioned  bool
	}{
		{"bot first", "@_user_1 /tasks", []mention{bot}, botOpenID, "/tasks", true},
		{"bot last", "/tasks @_user_1", []mention{bot}, botOpenID, "/tasks", true},
		{"other only", "@_user_2 hi", []mention{bob}, botOpenID, "@Bob hi", false},
		{"both", "@_user_1 tell @_user_2", []mention{bot, bob}, botOpenID, "tell @Bob", true},
		{"prefix keys", "@_user_10 and @_user_1", []mention{bot, ten}, botOpenID, "@Ten and", true},
		{"unknown bot", "@_user_1 /tasks", []mention{bot}, "", "@herald /tasks", false},
		{"no mentions", "  /help  ", nil, botOpenID, "/help", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []mentionLike
			for _, m := range tt.ms {
				b, _ := json.Marshal(map[string]any{"key": m.key, "id": map[string]string{"open_id": m.openID}, "name": m.name})
				var ev mentionLike
				if err := json.Unmarshal(b, &ev); err != nil {
					t.Fatal(err)
				}
				ms = append(ms, ev)
			}
			ms = append(ms, nil) // tolerated
			got, mentioned := resolveMentions(tt.text, ms, tt.botID)
			if got != tt.want || mentioned != tt.mentioned {
				t.Fatalf("= %q, %v; want %q, %v", got, mentioned, tt.want, tt.mentioned)
			}
		})
	}
}

func TestDetectLang(t *testing.T) {
	tests := []struct{ text, def, want string }{
		{"/watch https://a.example.edu/feed every 30m", "", ""},
		{"/watch https://a.example.edu/feed every 30m", "zh", "zh"},
		{"帮我关注这个 https://a.example.edu/feed", "en", "zh"},
		{"/tasks 看看", "", "zh"},
		{"please show my tasks", "zh", "en"},
		{"what can you do?", "", "en"},
		{"/approve r-7f3a", "", ""},
		{"ok", "zh", "zh"},
		{"https://例子.example/路径 ok", "", ""},
	}
	for _, tt := range tests {
		if got := detectLang(tt.text, tt.def); got != tt.want {
			t.Errorf("detectLang(%q, %q) = %q, want %q", tt.text, tt.def, got, tt.want)
		}
	}
}

func TestScrubQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"connected to wss://msg-frontier.feishu.cn/ws/v2?fpid=493&aid=552564&device_id=7&access_key=abc&ticket=xyz[conn_id=7]", "connected to wss://msg-frontier.feishu.cn/ws/v2?…]"},
		{"GET https://a.example/x?token=1 and https://b.example/y done", "GET https://a.example/x?… and https://b.example/y done"},
		{"no url here", "no url here"},
	}
	for _, tt := range tests {
		if got := scrubQuery(tt.in); got != tt.want {
			t.Errorf("scrubQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
