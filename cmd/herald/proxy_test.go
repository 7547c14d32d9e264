package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/egress/probe"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

// Secrets of the proxy acceptance: none may appear in any output.
const (
	pxPassword = "px-pa55-0f-herald"
	pxWrong    = "wr0ng-pa55-herald"
	pxToken    = "7012345678:AAproxyTestTokenForHerald0123456789"
)

// proxiedBotAPI is the Telegram Bot API on loopback, reachable only under a
// name its proxy knows: one /help from the admin in the first getUpdates,
// then nothing; it records the methods called and the messages sent.
type proxiedBotAPI struct {
	mu      sync.Mutex
	methods []string
	sent    []string // chat ids of sendMessage
	served  bool
}

func (f *proxiedBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if !strings.HasPrefix(r.URL.Path, "/bot"+pxToken+"/") {
		http.Error(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	_ = r.ParseMultipartForm(1 << 20)
	f.mu.Lock()
	f.methods = append(f.methods, method)
	first := !f.served && method == "getUpdates"
	if first {
		f.served = true
	}
	if method == "sendMessage" {
		f.sent = append(f.sent, r.FormValue("chat_id"))
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getMe":
		_, _ = io.WriteString(w, `{"ok":true,"result":{"id":7012345678,"is_bot":true,"first_name":"herald","username":"herald_test_bot"}}`)
	case "getUpdates":
		if !first {
			select {
			case <-r.Context().Done():
			case <-time.After(300 * time.Millisecond):
			}
			_, _ = io.WriteString(w, `{"ok":true,"result":[]}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":[{"update_id":900001,"message":{"message_id":1,"date":%d,"chat":{"id":10001,"type":"private"},"from":{"id":10001,"is_bot":false,"first_name":"Ada"},"text":"/help"}}]}`, time.Now().Unix())
	case "sendMessage":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":2,"date":%d,"chat":{"id":10001,"type":"private"},"text":"x"}}`, time.Now().Unix())
	default:
		_, _ = io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

func (f *proxiedBotAPI) calls() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.methods), slices.Clone(f.sent)
}

// remotes records where each request to a fake came from.
type remotes struct {
	mu   sync.Mutex
	seen []string
}

func (rm *remotes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rm.mu.Lock()
		rm.seen = append(rm.seen, r.RemoteAddr)
		rm.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// onlyVia fails unless every request rm saw came over a connection
// opened by proxy p.
func (rm *remotes) onlyVia(t *testing.T, what string, p *proxytest.Proxy) {
	t.Helper()
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if len(rm.seen) == 0 {
		t.Fatalf("%s saw no request", what)
	}
	for _, r := range rm.seen {
		if !p.Carried(r) {
			t.Fatalf("%s saw a request from %s, a connection its proxy did not open", what, r)
		}
	}
}

func hostPort(raw string) string { u, _ := url.Parse(raw); return u.Host }

// proxyConfig is the acceptance's config: private networks not allowed,
// Telegram through the SOCKS5 proxy gfw, the webhook recipient and the
// campus feed through the HTTP proxy campus, each target a name that
// resolves only inside its proxy.
func proxyConfig(addr, gfw, campus string) string {
	return `server:
  listen: ` + addr + `
policy: {admins: ["telegram:10001"], allow_private_networks: false}
network:
  proxy: direct
  proxies:
    gfw: "` + gfw + `"
    campus: "` + campus + `"
channels:
  telegram: {enabled: true, token: "` + pxToken + `", mode: polling, api_url: "https://api.telegram.test", proxy: gfw}
recipients:
  ops:
    webhook: {url: "https://hooks.ops.test/herald", secret: "` + recipientSecret + `", idempotent: false, proxy: campus}
tasks:
  - {id: campus-news, source: {kind: rss, url: "http://news.campus.test/feed.xml", proxy: campus}, schedule: every 24h, notify: [ops]}
`
}

// TestProxy_AcceptanceThroughSOCKS5AndHTTPProxies: with private networks
// not allowed and every target a name that resolves only inside the
// proxies, Telegram polling works through the SOCKS5 proxy, a source and
// a webhook recipient through the HTTP proxy; a literal 127.0.0.1 source
// is refused before any proxy sees it; herald doctor reports ok, then
// names the failing route once the proxy stops, then reports proxy auth
// for a wrong password after a reload; no secret appears in any output.
func TestProxy_AcceptanceThroughSOCKS5AndHTTPProxies(t *testing.T) {
	bot := &proxiedBotAPI{}
	var botSeen, hookSeen, feedSeen remotes
	botSrv, botCert := proxytest.NewTLSServer(t, botSeen.wrap(bot), "api.telegram.test")
	rcv := &struct {
		mu  sync.Mutex
		got int
	}{}
	hookSrv, hookCert := proxytest.NewTLSServer(t, hookSeen.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rcv.mu.Lock()
		rcv.got++
		rcv.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})), "hooks.ops.test")
	// The service trusts both certificates through SSL_CERT_FILE.
	pem := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(pem, append(botCert.PEM, hookCert.PEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	fd := newFeed(t)
	feedSrv := httptest.NewServer(feedSeen.wrap(fd.srv.Config.Handler))
	t.Cleanup(feedSrv.Close)
	hosts := map[string]string{
		"api.telegram.test:443": hostPort(botSrv.URL),
		"hooks.ops.test:443":    hostPort(hookSrv.URL),
		"news.campus.test:80":   hostPort(feedSrv.URL),
	}
	gfw := proxytest.NewSOCKS5(t, hosts, "herald", pxPassword)
	campus := proxytest.NewHTTP(t, hosts, "herald", pxPassword)

	addr := freeAddr(t)
	cfgPath := writeConfig(t, proxyConfig(addr, gfw.URL(), campus.URL()))
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, cfgPath, dataDir, "SSL_CERT_FILE="+pem)
	var outputs []string
	runOut := func(args ...string) (string, int) {
		out, errOut, code := runEnv(t, []string{"SSL_CERT_FILE=" + pem}, append(args, "--data-dir", dataDir)...)
		outputs = append(outputs, out, errOut)
		return out, code
	}

	// Telegram polling through SOCKS5: the admin's /help is answered.
	eventually(t, "the /help sent through getUpdates is answered through the SOCKS5 proxy", func() bool {
		_, sent := bot.calls()
		return slices.Contains(sent, "10001")
	})
	if !slices.Contains(gfw.Targets(), "api.telegram.test:443") {
		t.Fatalf("the SOCKS5 proxy never carried the Bot API: %v", gfw.Targets())
	}

	// A source and a webhook recipient through the HTTP proxy: the first
	// run is the baseline, the second pushes the new item.
	if _, code := runOut("tasks", "run", "campus-news"); code != 0 {
		t.Fatalf("first run failed\n%s", strings.Join(outputs, "\n"))
	}
	fd.addItem("proxy-item-1", "Through the campus proxy")
	if _, code := runOut("tasks", "run", "campus-news"); code != 0 {
		t.Fatalf("second run failed\n%s", strings.Join(outputs, "\n"))
	}
	// Two pushes: the baseline's confirmation and the new item.
	eventually(t, "the webhook recipient receives the new item through the HTTP proxy", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.got == 2
	})
	for _, want := range []string{"news.campus.test:80", "hooks.ops.test:443"} {
		if !slices.Contains(campus.Targets(), want) {
			t.Fatalf("the HTTP proxy never carried %s: %v", want, campus.Targets())
		}
	}

	// A literal 127.0.0.1 source is refused before any proxy sees it.
	chat, chatErr, _ := chatCLI(t, dataDir, "admin", "/watch "+fd.url()+" every 1h\n")
	outputs = append(outputs, chat, chatErr)
	if !strings.Contains(chat+chatErr, "loopback") {
		t.Errorf("the /watch of a loopback source was not refused as such:\n%s\n%s", chat, chatErr)
	}
	for _, pr := range []*proxytest.Proxy{gfw, campus} {
		for _, target := range pr.Targets() {
			if strings.HasPrefix(target, "127.") {
				t.Fatalf("a proxy was asked for %s", target)
			}
		}
	}

	// Nothing reached a fake except through its proxy: every name above
	// resolves only there, and each fake saw only what its proxy carried.
	botSeen.onlyVia(t, "the Bot API", gfw)
	hookSeen.onlyVia(t, "the webhook recipient", campus)
	feedSeen.onlyVia(t, "the campus feed", campus)

	// doctor: all ok.
	var results []probe.Result
	out, code := runOut("doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor with the proxies up: exit %d\n%s\n%s", code, out, strings.Join(outputs, "\n"))
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	want := map[string]string{"telegram getMe": "gfw", "recipient ops": "campus", "source host": "campus"}
	for _, r := range results {
		if route, ok := want[r.Check]; ok && (r.Route != route || r.Result != probe.OK) {
			t.Errorf("doctor: %+v, want ok via %s", r, route)
		}
		delete(want, r.Check)
	}
	if len(want) != 0 {
		t.Fatalf("doctor did not check %v: %s", want, out)
	}

	// The campus proxy stops: doctor names the failing route and exits 1.
	campus.Close()
	out, code = runOut("doctor")
	if code != 1 {
		t.Fatalf("doctor with the campus proxy down: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "campus") && !strings.HasPrefix(line, probe.ProxyConnect) {
			t.Errorf("a line on the campus route is not a proxy connect failure: %q", line)
		}
	}
	if !strings.Contains(out, "ops") || !strings.Contains(out, "proxy campus cannot be reached") {
		t.Fatalf("doctor does not name the failing route:\n%s", out)
	}

	// A wrong password, reloaded with SIGHUP: proxy auth, named.
	campus2 := proxytest.NewHTTP(t, hosts, "herald", pxPassword)
	if err := os.WriteFile(cfgPath, []byte(proxyConfig(addr, gfw.URLWith("herald", pxWrong), campus2.URLWith("herald", pxWrong))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload is logged", func() bool { return strings.Contains(p.log.String(), "configuration reloaded") })
	out, code = runOut("doctor", "--json")
	if code != 1 {
		t.Fatalf("doctor with wrong passwords: exit %d\n%s", code, out)
	}
	results = nil
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	for _, r := range results {
		if r.Route != "direct" && (r.Result != probe.ProxyAuth || !strings.Contains(r.Detail, "proxy "+r.Route)) {
			t.Errorf("wrong password: %+v, want proxy auth naming the proxy", r)
		}
	}

	// No secret in any output or in the service's log.
	all := strings.Join(append(outputs, p.log.String()), "\n")
	for _, sec := range []string{pxPassword, pxWrong, pxToken, recipientSecret} {
		if strings.Contains(all, sec) {
			t.Fatalf("a secret appears in the output:\n%s", all)
		}
	}
}
