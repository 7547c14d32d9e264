package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Feishu test app. The secret and the tokens the fake issues must never
// reach the log (I10).
const (
	feishuAppID       = "cli_herald_serve_test"
	feishuSecret      = "fs-app-s3cret-VALUE-5b1d"
	feishuVerifyToken = "fs-verification-TOKEN-c3"
	feishuTokenPrefix = "t-g1044fake"
	feishuP2P         = "oc_p2p0000000000000000000000000009"
	feishuTeam        = "oc_team000000000000000000000000009"
	feishuUser        = "ou_user0000000000000000000000000009"
)

// fakeFeishuPlatform speaks the open platform's wire format: the tenant
// token endpoint and im/v1/messages with a Bearer check.
type fakeFeishuPlatform struct {
	srv *httptest.Server

	mu         sync.Mutex
	tokenCalls int
	valid      map[string]bool
	byChat     map[string]int
}

func newFakeFeishuPlatform(t *testing.T) *fakeFeishuPlatform {
	t.Helper()
	f := &fakeFeishuPlatform{valid: map[string]bool{}, byChat: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func feishuJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (f *fakeFeishuPlatform) handle(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/open-apis/auth/v3/tenant_access_token/internal":
		var in map[string]string
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokenCalls++
		if in["app_id"] != feishuAppID || in["app_secret"] != feishuSecret {
			feishuJSON(w, 400, `{"code":10014,"msg":"app secret invalid"}`)
			return
		}
		tok := fmt.Sprintf("%s%04d", feishuTokenPrefix, f.tokenCalls)
		f.valid[tok] = true
		feishuJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"ok","tenant_access_token":%q,"expire":7200}`, tok))
	case "/open-apis/im/v1/messages":
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var body struct {
			ReceiveID string `json:"receive_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.valid[tok] {
			feishuJSON(w, 400, `{"code":99991663,"msg":"Invalid access token for authorization."}`)
			return
		}
		f.byChat[body.ReceiveID]++
		feishuJSON(w, 200, fmt.Sprintf(`{"code":0,"msg":"success","data":{"message_id":"om_%d"}}`, len(f.byChat)))
	default:
		feishuJSON(w, 404, `{"code":404,"msg":"404 page not found"}`)
	}
}

// counts returns the token fetches and the messages each chat got.
func (f *fakeFeishuPlatform) counts(chat string) (tokens, messages int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls, f.byChat[chat]
}

// revoke invalidates every token issued so far.
func (f *fakeFeishuPlatform) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.valid = map[string]bool{}
}

// feishuMessageEvent is an im.message.receive_v1 webhook event from a
// user in a p2p chat, as the platform posts it without an encrypt key.
func feishuMessageEvent(n int, text string) []byte {
	content, _ := json.Marshal(map[string]string{"text": text})
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]string{
			"event_id": fmt.Sprintf("ev-serve-%d", n), "event_type": "im.message.receive_v1",
			"create_time": "1796025600000", "token": feishuVerifyToken, "app_id": feishuAppID, "tenant_key": "736588c9260f175d",
		},
		"event": map[string]any{
			"sender": map[string]any{"sender_id": map[string]string{"open_id": feishuUser}, "sender_type": "user"},
			"message": map[string]any{
				"message_id": fmt.Sprintf("om_in_%d", n), "create_time": "1796025600000", "chat_id": feishuP2P,
				"chat_type": "p2p", "message_type": "text", "content": string(content),
			},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

func TestServe_FeishuChannelAndSinkShareOneTenantToken(t *testing.T) {
	fake := newFakeFeishuPlatform(t)
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		`public_url: ""`:                                     `public_url: "https://herald.example.com"`,
		`app_id: "${FEISHU_APP_ID}"`:                         `app_id: "` + feishuAppID + `"`,
		`app_secret: "${FEISHU_APP_SECRET}"`:                 `app_secret: "` + feishuSecret + `"`,
		"mode: websocket":                                    "mode: webhook",
		`verification_token: "${FEISHU_VERIFICATION_TOKEN}"`: `verification_token: "` + feishuVerifyToken + `"`,
		`encrypt_key: "${FEISHU_ENCRYPT_KEY}"`:               `encrypt_key: ""`,
		`base_url: ""`:                                       `base_url: "` + fake.srv.URL + `"`,
		"recipients:\n":                                      "recipients:\n  team:\n    address: \"feishu:chat:" + feishuTeam + "\"\n",
		"inbound: {}":                                        "inbound:\n  ci:\n    format: standard\n    secret: \"" + hookSecret + "\"\n    route: [team]\n",
	})
	p, _ := startServe(t, cfg)

	events, hooks := 0, 0
	chat := func(n int) {
		t.Helper()
		for range n {
			events++
			resp, err := http.Post(p.url("/feishu/events"), "application/json; charset=utf-8", bytes.NewReader(feishuMessageEvent(events, "/help")))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /feishu/events = %d", resp.StatusCode)
			}
		}
	}
	push := func(n int) {
		t.Helper()
		for range n {
			hooks++
			body := []byte(fmt.Sprintf(`{"title":"build %d passed","url":"https://ci.example.com/%d"}`, hooks, hooks))
			req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
			req.Header = signHook(hookSecret, fmt.Sprintf("msg_build%d", hooks), time.Now(), body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("POST /hooks/ci = %d", resp.StatusCode)
			}
		}
	}
	// delivered waits until every reply and push so far reached the fake.
	delivered := func() {
		t.Helper()
		eventually(t, "the replies and pushes reach the platform", func() bool {
			_, replies := fake.counts(feishuP2P)
			_, pushes := fake.counts(feishuTeam)
			return replies == events && pushes == hooks
		})
	}
	fetches := func() int { n, _ := fake.counts(""); return n }

	const replies, pushes = 5, 5
	chat(replies)
	push(pushes)
	delivered()
	if n := fetches(); n != 1 {
		t.Fatalf("token fetches = %d for %d replies and %d pushes of one app; want 1", n, replies, pushes)
	}

	// A reload rebuilds the sink; the app and so its token stay.
	raw, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload is applied", func() bool { return strings.Contains(p.log.String(), "configuration reloaded") })
	push(1)
	chat(1)
	delivered()
	if n := fetches(); n != 1 {
		t.Fatalf("token fetches after a reload = %d, want 1", n)
	}

	// The platform revokes the token: one refetch serves both sides.
	fake.revoke()
	push(pushes)
	chat(replies)
	delivered()
	if n := fetches(); n != 2 {
		t.Fatalf("token fetches after the platform revoked the token = %d, want 2", n)
	}

	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	log := p.log.String()
	for _, s := range []string{feishuSecret, feishuVerifyToken, feishuTokenPrefix, feishuP2P, feishuTeam} {
		if strings.Contains(log, s) {
			t.Errorf("the log contains %q (I10)", s)
		}
	}
}
