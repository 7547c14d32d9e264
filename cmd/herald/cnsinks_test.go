package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	oneBotToken    = "nb-8e1f3a5c7e9b2d4f"
	oneBotTokenEnv = "HERALD_TEST_ONEBOT_TOKEN"
	pushPlusToken  = "5d7f9b1c3e5a7c9e1b3d5f7a9c1e3b5d"
	serverChanKey  = "SCT314159TqWeRtY271828aBc"
)

// recorder is a fake push service on 127.0.0.1: it keeps each request's
// path, headers and body and answers every one with answer.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	raws   []string
	heads  []http.Header
	paths  []string
}

func newRecorder(t *testing.T, answer string) *recorder {
	t.Helper()
	rc := &recorder{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		rc.mu.Lock()
		rc.bodies, rc.raws = append(rc.bodies, body), append(rc.raws, string(raw))
		rc.heads, rc.paths = append(rc.heads, r.Header.Clone()), append(rc.paths, r.URL.Path)
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *recorder) n() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.raws)
}

// TestCNSinks_HookArrivesOnceAtEach_SendTestWorks: an inbound hook whose
// title holds Chinese text, &, <b> and a CQ code arrives once at a QQ
// group (OneBot), PushPlus and ServerChan, escaped for each, and
// send-test sends exactly one more message to each; the serve log
// carries no token or key.
func TestCNSinks_HookArrivesOnceAtEach_SendTestWorks(t *testing.T) {
	qq := newRecorder(t, `{"status":"ok","retcode":0,"data":{"message_id":42}}`)
	pp := newRecorder(t, `{"code":200,"msg":"ok","data":"serial-1"}`)
	sc := newRecorder(t, `{"code":0,"message":"","data":{"pushid":"1"}}`)
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"inbound: {}": "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [qq-class, wechat-pp, wechat-sc]\n",
		"recipients:\n": "recipients:\n" +
			"  qq-class:\n    onebot: {url: \"" + qq.URL + "\", access_token: \"${" + oneBotTokenEnv + "}\", group_id: 734291856}\n    language: zh\n" +
			"  wechat-pp:\n    pushplus: {token: \"" + pushPlusToken + "\", base_url: \"" + pp.URL + "\"}\n    language: zh\n" +
			"  wechat-sc:\n    serverchan: {sendkey: \"" + serverChanKey + "\", base_url: \"" + sc.URL + "\"}\n    language: zh\n",
	})
	p, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret, oneBotTokenEnv+"="+oneBotToken)

	title := "构建 42 & <b>通过</b> [CQ:at,qq=all]"
	body, _ := json.Marshal(map[string]string{"title": title, "url": "https://ci.example.com/42?a=1&b=2"})
	req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
	req.Header = signHook(hookSecret, "msg_build42", time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /hooks/ci = %d, want 202", resp.StatusCode)
	}
	eventually(t, "the hook's pushes complete", func() bool {
		var fxs []effectRow
		cliJSON(t, dataDir, &fxs, "ledger", "show", "ci")
		done := 0
		for _, fx := range fxs {
			if fx.State == "completed" {
				done++
			}
		}
		return len(fxs) == 3 && done == 3
	})
	if qq.n() != 1 || pp.n() != 1 || sc.n() != 1 {
		t.Fatalf("requests: onebot %d, pushplus %d, serverchan %d; want 1 each", qq.n(), pp.n(), sc.n())
	}

	// QQ: one literal text segment, the bearer token, send_group_msg.
	if qq.paths[0] != "/send_group_msg" || qq.heads[0].Get("Authorization") != "Bearer "+oneBotToken {
		t.Errorf("onebot call %s", qq.paths[0])
	}
	segs, _ := qq.bodies[0]["message"].([]any)
	if len(segs) != 1 {
		t.Fatalf("onebot message %s", qq.raws[0])
	}
	seg := segs[0].(map[string]any)
	text, _ := seg["data"].(map[string]any)["text"].(string)
	if seg["type"] != "text" || !strings.Contains(text, title) || !strings.Contains(text, "https://ci.example.com/42?a=1&b=2") {
		t.Errorf("onebot segment %v", seg)
	}
	// PushPlus: escaped HTML with the link.
	content, _ := pp.bodies[0]["content"].(string)
	if pp.paths[0] != "/send" || pp.bodies[0]["token"] != pushPlusToken || !strings.Contains(content, "构建 42 &amp; &lt;b&gt;通过&lt;/b&gt; [CQ:at,qq=all]") ||
		!strings.Contains(content, `<a href="https://ci.example.com/42?a=1&amp;b=2">`) || strings.Contains(content, "<b>通过") {
		t.Errorf("pushplus body %s", pp.raws[0])
	}
	// ServerChan: escaped Markdown with the link, the key in the path.
	desp, _ := sc.bodies[0]["desp"].(string)
	if sc.paths[0] != "/"+serverChanKey+".send" || !strings.Contains(desp, `构建 42 &amp; &lt;b&gt;通过&lt;/b&gt; \[CQ:at,qq=all\]`) ||
		!strings.Contains(desp, "(https://ci.example.com/42?a=1&b=2)") || strings.Contains(desp, "<b>") {
		t.Errorf("serverchan body %s", sc.raws[0])
	}

	for _, name := range []string{"qq-class", "wechat-pp", "wechat-sc"} {
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", name)
		if v.State != "completed" || v.Recipient != name || v.Attempts != 1 {
			t.Errorf("send-test %s = %+v", name, v)
		}
	}
	if qq.n() != 2 || pp.n() != 2 || sc.n() != 2 {
		t.Errorf("after send-test: onebot %d, pushplus %d, serverchan %d requests, want 2 each", qq.n(), pp.n(), sc.n())
	}
	for _, s := range []string{oneBotToken, pushPlusToken, serverChanKey, "734291856"} {
		if strings.Contains(p.log.String(), s) {
			t.Errorf("serve log carries a secret %q", s[:6])
		}
	}
}
