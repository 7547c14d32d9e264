package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	slackHookPath   = "/services/T0HERALD1/B0HERALD2/q7Xk2LmN9pR4sT8vW1yZ3bC5"
	discordHookPath = "/api/webhooks/1180000000000000001/Zq8vLm3Nx7Rk2Tp9Wy4Bc6Df1Gh5Jk0Ls8Mn3Pq7Rt2Vw6Xy"
	discordTokenEnv = "HERALD_TEST_DISCORD_TOKEN"
)

// chatHook is a Slack or Discord webhook on 127.0.0.1 that records the
// text of each message posted to path: Slack answers "ok", Discord the
// message (wait=true); any other path is answered as an unknown webhook.
type chatHook struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newChatHook(t *testing.T, path, field string) *chatHook {
	h := &chatHook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.URL.Path != path || json.Unmarshal(raw, &body) != nil {
			http.Error(w, "no_service", http.StatusNotFound)
			return
		}
		text, _ := body[field].(string)
		h.mu.Lock()
		n := len(h.got)
		h.got = append(h.got, text)
		h.mu.Unlock()
		if field == "text" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"%d","content":%q}`, 1190000000000000000+n, text)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *chatHook) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// TestChatHooks_InboundHookArrivesOnceAtSlackAndDiscord_SendTestWorks: an
// inbound hook whose title holds Chinese text, &, <b>, a CQ code and
// mentions arrives once at a Slack and a Discord webhook, escaped for
// each; send-test sends exactly one more message to each (Discord's
// message id shown); the serve log
// carries neither webhook's token.
func TestChatHooks_InboundHookArrivesOnceAtSlackAndDiscord_SendTestWorks(t *testing.T) {
	sl := newChatHook(t, slackHookPath, "text")
	dc := newChatHook(t, discordHookPath, "content")
	discordToken := discordHookPath[strings.LastIndexByte(discordHookPath, '/')+1:]
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"inbound: {}": "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [slack-ops, discord-ops]\n",
		"recipients:\n": "recipients:\n  slack-ops:\n    slack: {url: \"" + sl.URL + slackHookPath + "\"}\n" +
			"  discord-ops:\n    discord: {url: \"" + dc.URL + strings.TrimSuffix(discordHookPath, discordToken) + "${" + discordTokenEnv + "}\"}\n    language: zh\n",
	})
	p, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret, discordTokenEnv+"="+discordToken)

	body := []byte(`{"title":"构建 42 & <b>通过</b> [CQ:at,qq=all] <!channel> @everyone","url":"https://ci.example.com/42"}`)
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
		return len(fxs) == 2 && done == 2
	})
	for name, c := range map[string]struct {
		h    *chatHook
		want string
	}{
		"slack":   {sl, "*构建 42 &amp; &lt;b&gt;通过&lt;/b&gt; [CQ:at,qq=all] &lt;!channel&gt; @everyone*"},
		"discord": {dc, `**构建 42 & \<b\>通过\</b\> \[CQ:at,qq=all\] \<!channel\> \@everyone**`},
	} {
		got := c.h.texts()
		if len(got) != 1 || !strings.Contains(got[0], c.want) || !strings.Contains(got[0], "https://ci.example.com/42") {
			t.Fatalf("%s webhook got %d messages, want one holding %q: %q", name, len(got), c.want, got)
		}
	}

	for _, name := range []string{"slack-ops", "discord-ops"} {
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", name)
		if v.State != "completed" || v.Recipient != name || v.Attempts != 1 || (name == "discord-ops") != (v.ProviderID != "") {
			t.Errorf("send-test %s = %+v", name, v)
		}
	}
	if len(sl.texts()) != 2 || len(dc.texts()) != 2 {
		t.Errorf("after send-test: slack %d, discord %d messages, want 2 each", len(sl.texts()), len(dc.texts()))
	}
	for _, s := range []string{"q7Xk2LmN9pR4sT8vW1yZ3bC5", discordToken} {
		if strings.Contains(p.log.String(), s) {
			t.Errorf("serve log carries a webhook token %q", s[:6])
		}
	}
}
