package main

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
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
	mu      sync.Mutex
	got     []map[string]any
	dropped bool // read each request, close without an answer
}

// drop makes the server drop (or answer again) every connection after
// reading the request.
func (ps *phoneServer) drop(on bool) {
	ps.mu.Lock()
	ps.dropped = on
	ps.mu.Unlock()
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
		dropped := ps.dropped
		ps.mu.Unlock()
		if dropped {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
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
// ntfyFake answers like an ntfy server holding ntfyTopic behind
// ntfyToken.
func ntfyFake(t *testing.T) *phoneServer {
	return newPhoneServer(t, func(r *http.Request, b map[string]any) (int, any) {
		if r.URL.Path != "/" || b["topic"] != ntfyTopic {
			return 400, map[string]any{"code": 40009, "http": 400, "error": "invalid request: topic invalid"}
		}
		if r.Header.Get("Authorization") != "Bearer "+ntfyToken {
			return 401, map[string]any{"code": 40101, "http": 401, "error": "unauthorized"}
		}
		return 200, map[string]any{"id": "a1B2c3D4e5F6", "time": time.Now().Unix(), "event": "message", "topic": ntfyTopic, "message": b["message"]}
	})
}

// barkFake answers like a bark-server with barkKey registered.
func barkFake(t *testing.T) *phoneServer {
	return newPhoneServer(t, func(r *http.Request, b map[string]any) (int, any) {
		if r.URL.Path != "/push" || b["device_key"] != barkKey {
			return 400, map[string]any{"code": 400, "message": "failed to get device token: failed to get [x] device token from database"}
		}
		return 200, map[string]any{"code": 200, "message": "success", "timestamp": time.Now().Unix()}
	})
}

// phoneRecipients are the my-phone (ntfy) and my-iphone (bark) sections.
func phoneRecipients(ntfySrv, barkSrv *phoneServer) string {
	return "recipients:\n  my-phone:\n    ntfy: {url: \"" + ntfySrv.URL + "/" + ntfyTopic + "\", token: \"${" + ntfyTokenEnv + "}\"}\n    language: zh\n" +
		"  my-iphone:\n    bark: {url: \"" + barkSrv.URL + "/${" + barkKeyEnv + "}\"}\n"
}

var phoneEnv = []string{ntfyTokenEnv + "=" + ntfyToken, barkKeyEnv + "=" + barkKey}

func TestPhones_InboundHookArrivesOnceAtNtfyAndBark_SendTestWorks(t *testing.T) {
	ntfySrv, barkSrv := ntfyFake(t), barkFake(t)
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"inbound: {}":   "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [my-phone, my-iphone]\n",
		"recipients:\n": phoneRecipients(ntfySrv, barkSrv),
	})
	p, dataDir := startServe(t, cfg, append(phoneEnv, hookSecretEnv+"="+hookSecret)...)

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

// TestPhones_RSSItemArrivesOnceEachNothingTwiceAfterRestart: an rss
// task notifying an ntfy topic and a Bark device is quiet at its
// baseline; a new item whose title holds Chinese text, &, <b> and a CQ
// code arrives once at each as plain text opening its link; an unchanged
// run sends nothing; a push whose connection dropped stays unknown; after
// a restart and a run nothing is sent twice and nothing turns completed.
func TestPhones_RSSItemArrivesOnceEachNothingTwiceAfterRestart(t *testing.T) {
	ntfySrv, barkSrv := ntfyFake(t), barkFake(t)
	feed := newFeed(t)
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"recipients:\n": phoneRecipients(ntfySrv, barkSrv),
		"tasks: []":     "tasks:\n  - id: news\n    name: Course news\n    source: {kind: rss, url: \"" + feed.url() + "\"}\n    schedule: every 30m\n    notify: [my-phone, my-iphone]\n",
	})
	p, dataDir := startServe(t, cfg, phoneEnv...)
	waitBaseline(t, dataDir, "news")
	// states counts the task's pushes to each recipient by state.
	states := func(what string, want map[string]int) {
		t.Helper()
		eventually(t, what, func() bool {
			var fxs []effectRow
			cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
			got := map[string]int{}
			for _, fx := range fxs {
				got[fx.Recipient+" "+fx.State]++
			}
			return maps.Equal(got, want)
		})
	}
	// The baseline lists no item: at most the one "now watching" notice.
	states("the baseline settles", map[string]int{"my-phone completed": 1, "my-iphone completed": 1})
	for _, body := range append(ntfySrv.bodies(), barkSrv.bodies()...) {
		if all, _ := json.Marshal(body); strings.Contains(string(all), "https://") {
			t.Fatalf("the baseline pushed an item: %s", all)
		}
	}

	const title = "期末考试 & <b>补考</b> [CQ:at,qq=all]"
	const link = "https://theomnishow.omnigroup.com/exam-1"
	// Escaped twice: the title's text is "<b>", not markup the source strips.
	feed.addItem("exam-1", "期末考试 &amp; &amp;lt;b&amp;gt;补考&amp;lt;/b&amp;gt; [CQ:at,qq=all]")
	cli(t, dataDir, "tasks", "run", "news")
	states("the item's pushes complete", map[string]int{"my-phone completed": 2, "my-iphone completed": 2})
	n, b := ntfySrv.bodies(), barkSrv.bodies()
	if len(n) != 2 || len(b) != 2 {
		t.Fatalf("ntfy got %d, bark %d pushes, want the notice and the item each", len(n), len(b))
	}
	if msg, _ := n[1]["message"].(string); !strings.Contains(msg, title) || n[1]["click"] != link {
		t.Errorf("ntfy message %v", n[1])
	}
	if body, _ := b[1]["body"].(string); !strings.Contains(body, title) || b[1]["url"] != link {
		t.Errorf("bark push %v", b[1])
	}

	cli(t, dataDir, "tasks", "run", "news")
	time.Sleep(200 * time.Millisecond)
	if len(ntfySrv.bodies()) != 2 || len(barkSrv.bodies()) != 2 {
		t.Fatalf("an unchanged run pushed: ntfy %d, bark %d", len(ntfySrv.bodies()), len(barkSrv.bodies()))
	}

	// The next item reaches the Bark server, which drops the connection.
	barkSrv.drop(true)
	feed.addItem("exam-2", "补考地点")
	cli(t, dataDir, "tasks", "run", "news")
	after := map[string]int{"my-phone completed": 3, "my-iphone completed": 2, "my-iphone unknown": 1}
	states("the second item settles", after)
	barkSrv.drop(false)

	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	startServeAt(t, p.cfgPath, dataDir, phoneEnv...)
	cli(t, dataDir, "tasks", "run", "news")
	time.Sleep(300 * time.Millisecond)
	states("nothing changes after the restart", after)
	if len(ntfySrv.bodies()) != 3 || len(barkSrv.bodies()) != 3 {
		t.Errorf("after the restart: ntfy %d, bark %d pushes, want 3 each", len(ntfySrv.bodies()), len(barkSrv.bodies()))
	}
}
