package configs

import (
	"strings"
	"testing"
)

// The network section (SPEC §17): named proxies, the default route and
// proxy: on channels, sink sections, config-declared sources and the
// assistant load and resolve to their routes.
func TestNetwork_ProxyKeysLoadAndResolve(t *testing.T) {
	src := `network:
  proxy: gfw
  no_proxy: ["*.example.edu", "10.0.0.0/8"]
  proxies:
    gfw: "socks5h://127.0.0.1:7890"
    campus: "http://herald:${CAMPUS_PROXY_PASSWORD}@proxy.example.edu:3128"
channels:
  telegram: {enabled: false, proxy: gfw}
  feishu: {enabled: false, proxy: direct}
recipients:
  ops:
    webhook: {url: "https://hooks.example.com/h", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", proxy: gfw}
  team:
    feishu_bot: {url: "https://open.feishu.cn/open-apis/bot/v2/hook/x", proxy: campus}
tasks:
  - {id: notices, source: {kind: rss, url: "https://news.example.edu/feed.xml", proxy: campus}, schedule: every 1h, notify: [ops]}
`
	cfg, err := loadString(t, src, env("CAMPUS_PROXY_PASSWORD", "pa55-w0rd"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cfg.Routes()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"": "gfw", "gfw": "gfw", "campus": "campus", "direct": "direct"} {
		r, err := rs.Get(name)
		if err != nil || r.Name() != want {
			t.Errorf("route %q: %s, %v; want %s", name, r.Name(), err, want)
		}
	}
	if got := cfg.Recipients["ops"].Webhook.ProxyName(); got != "gfw" {
		t.Errorf("webhook proxy %q", got)
	}
	if got := cfg.Recipients["team"].FeishuBot.ProxyName(); got != "campus" {
		t.Errorf("feishu_bot proxy %q", got)
	}
	if cfg.Tasks[0].Source.Proxy != "campus" || cfg.Channels.Telegram.Proxy != "gfw" || cfg.Channels.Feishu.Proxy != "direct" {
		t.Errorf("proxy keys: %+v %+v %+v", cfg.Tasks[0].Source, cfg.Channels.Telegram, cfg.Channels.Feishu)
	}
	if s := cfg.ProxySecrets(); len(s) != 1 || s[0] != "pa55-w0rd" {
		t.Errorf("proxy secrets %q", s)
	}
}

// Each problem is reported at its line; a proxy URL (which may hold a
// password) is never printed.
func TestNetwork_ProblemsAtTheirLines(t *testing.T) {
	const pw = "hunter2-secret"
	src := `network:
  proxy: nowhere
  proxies:
    bad: "ftp://u:` + pw + `@p.example:21"
    direct: "http://127.0.0.1:3128"
channels:
  telegram: {enabled: false, proxy: gfw}
assistant: {proxy: campus}
recipients:
  ops:
    webhook: {url: "https://hooks.example.com/h", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", proxy: other}
tasks:
  - {id: n, source: {kind: rss, url: "https://news.example.edu/feed.xml", proxy: nope}, schedule: every 1h, notify: [ops]}
`
	_, err := loadString(t, src, noEnv)
	if err == nil {
		t.Fatal("no problems reported")
	}
	msg := err.Error()
	for _, want := range []string{
		":2: network.proxy: no proxy named \"nowhere\"",
		":4: network.proxies.bad: not a usable proxy URL",
		":5: network.proxies.direct: \"direct\" is reserved",
		":7: channels.telegram.proxy: no proxy named \"gfw\"",
		":8: assistant.proxy: no proxy named \"campus\"",
		":11: recipients.ops.webhook.proxy: no proxy named \"other\"",
		":13: tasks[0].source.proxy: no proxy named \"nope\"",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, pw) {
		t.Fatalf("a proxy password is printed:\n%s", msg)
	}
}
