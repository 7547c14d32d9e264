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
	ntfyTopic    = "herald-phone-5d1e9b7c"
	ntfyToken    = "tk_7mVBoFD37zQVN29RhuMzNIz2AgQdq"
	ntfyTokenEnv = "HERALD_TEST_NTFY_TOKEN"
	barkKey      = "Zq9mVBoFD37zQVN29RhuKp"
	barkKeyEnv   = "HERALD_TEST_BARK_KEY"
)

// phoneServer is a fake ntfy server or bark-server: it records each
// JSON body and answers as the service does on success.
type phoneServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []map[string]any
}

func newPhoneServer(t *testing.T, ok func(r *http.Request, body map[string]any) (int, any)) *phoneServer {
	ps := &phoneServer{}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if json.Unmarshal(raw, &body) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ps.mu.Lock()
		ps.got = append(ps.got, body)
		ps.mu.Unlock()
		status, answer := ok(r, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(ps.Close)
	return ps
}

func (ps *phoneServer) bodies() []map[string]any {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]map[string]any(nil), ps.got...)
}

// TestPhones_InboundHookArrivesOnceAtNtfyAndBark_SendTestWorks: an
// inbound hook routed to an ntfy topic and a Bark device arrives once at
// each, its title as plain text with its link; send-test reaches each
// once more; the serve log carries neither topic, token nor device key.
func TestPhones_InboundHookArrivesOnceAtNtfyAndBark_SendTestWorks(t *testing.T) {
	ntfySrv := newPhoneServer(t, func(r *http.Request, b map[string]any) (int, any) {
		if r.URL.Path != "/" || b["topic"] != ntfyTopic {
			return 400, map[string]any{"code": 40009, "http": 400, "error": "invalid request: topic invalid"}
		}
		if r.Header.Get("Authorization") != "Bearer "+ntfyToken {
			return 401, map[string]any{"code": 40101, "http": 401, "error": "unauthorized"}
		}
		return 200, map[string]any{"id": "a1B2c3D4e5F6", "time": time.Now().Unix(), "event": "message", "topic": ntfyTopic, "message": b["message"]}
	})
	barkSrv := newPhoneServer(t, func(r *http.Request, b map[string]any) (int, any) {
		if r.URL.Path != "/push" || b["device_key"] != barkKey {
			return 400, map[string]any{"code": 400, "message": "failed to get device token: failed to get [x] device token from database"}
		}
		return 200, map[string]any{"code": 200, "message": "success", "timestamp": time.Now().Unix()}
	})
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"inbound: {}": "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [my-phone, my-iphone]\n",
		"recipients:\n": "recipients:\n  my-phone:\n    ntfy: {url: \"" + ntfySrv.URL + "/" + ntfyTopic + "\", token: \"${" + ntfyTokenEnv + "}\"}\n    language: zh\n" +
			"  my-iphone:\n    bark: {url: \"" + barkSrv.URL + "/${" + barkKeyEnv + "}\"}\n",
	})
	p, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret, ntfyTokenEnv+"="+ntfyToken, barkKeyEnv+"="+barkKey)

	const title = "期末考试 & <b>补考</b> [CQ:at,qq=all]"
	const link = "https://jw.example.edu.cn/notice/42"
	body := []byte(`{"title":"` + title + `","url":"` + link + `"}`)
	req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
	req.Header = signHook(hookSecret, "msg_exam42", time.Now(), body)
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
	for name, got := range map[string][]map[string]any{"ntfy": ntfySrv.bodies(), "bark": barkSrv.bodies()} {
		if len(got) != 1 {
			t.Fatalf("%s got %d pushes: %v", name, len(got), got)
		}
		all, _ := json.Marshal(got[0])
		if !strings.Contains(string(all), `"期末考试 & <b>补考</b> [CQ:at,qq=all]`) && !strings.Contains(string(all), `期末考试 \u0026 \u003cb\u003e补考\u003c/b\u003e [CQ:at,qq=all]`) {
			t.Errorf("%s push lacks the title as plain text: %s", name, all)
		}
		if !strings.Contains(string(all), link) {
			t.Errorf("%s push lacks the link: %s", name, all)
		}
	}
	if ntfySrv.bodies()[0]["click"] != link || barkSrv.bodies()[0]["url"] != link {
		t.Errorf("the notifications do not open the link: ntfy %v, bark %v", ntfySrv.bodies()[0]["click"], barkSrv.bodies()[0]["url"])
	}

	for _, name := range []string{"my-phone", "my-iphone"} {
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", name)
		if v.State != "completed" || v.Recipient != name || v.Attempts != 1 {
			t.Errorf("send-test %s = %+v", name, v)
		}
	}
	if len(ntfySrv.bodies()) != 2 || len(barkSrv.bodies()) != 2 {
		t.Errorf("after send-test: ntfy %d, bark %d pushes, want 2 each", len(ntfySrv.bodies()), len(barkSrv.bodies()))
	}
	for _, s := range []string{ntfyTopic, ntfyToken, barkKey} {
		if strings.Contains(p.log.String(), s) {
			t.Errorf("serve log carries a secret %q", s[:6])
		}
	}
}
