package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMetrics_AlertRulesPassPromtoolAndNameExportedMetrics: the rule file
// in the docs passes `promtool check rules`, and every metric its rules
// name is on /metrics of a service in the state they alert on: a failing
// task, a request waiting for approval, a push queued for a robot that
// refuses connections — counted as unreachable, not retry_after.
func TestMetrics_AlertRulesPassPromtoolAndNameExportedMetrics(t *testing.T) {
	rules := filepath.Join("..", "..", "docs", "herald-rules.yml")
	promtool, err := exec.LookPath("promtool")
	switch {
	case err == nil:
		if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	case os.Getenv("CI") != "":
		t.Errorf("CI is set but promtool is not installed; .ci/run installs it")
	default:
		t.Log("promtool is not installed (apt-get install prometheus); only the metric names are checked")
	}
	raw, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, m := range regexp.MustCompile(`expr:.*`).FindAllString(string(raw), -1) {
		for _, n := range regexp.MustCompile(`\bherald_[a-z_]+\b`).FindAllString(m, -1) {
			if !slices.Contains(named, n) {
				named = append(named, n)
			}
		}
	}
	if len(named) < 7 {
		t.Fatalf("the rule file names %d metrics: %v", len(named), named)
	}

	f := newFeed(t)
	dead := freeAddr(t)
	p, dataDir := startServe(t, adjustExample(t, freeAddr(t), map[string]string{
		"recipients:\n": "recipients:\n  wecom-dead:\n    wecom_bot: {url: \"http://" + dead + "/cgi-bin/webhook/send?key=" + wecomKey + "\"}\n",
		"tasks: []":     "tasks:\n  - id: locked\n    source: {kind: rss, url: \"" + f.srv.URL + "/denied.xml\"}\n    schedule: every 30m\n    notify: [admin-inbox]\n",
	}))
	waitBaseline(t, dataDir, "locked")
	if out, _, code := chatCLI(t, dataDir, "alice", "/watch "+f.url()+" every 1h\n"); code != 0 || !strings.Contains(out, "r-") {
		t.Fatalf("alice's request: %s", out)
	}
	run(t, "send-test", "wecom-dead", "--follow=false", "--data-dir", dataDir)

	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, n := range named {
		if !strings.Contains(text, "\n"+n+"{") && !strings.Contains(text, "\n"+n+" ") {
			t.Errorf("a rule names %s, which /metrics does not export", n)
		}
	}
	for _, want := range []string{`herald_channel_state{channel="console",state="on"} 1`, `herald_tasks_failing{class="auth"} 1`,
		`herald_requests_pending 1`, `herald_pushes_queued 1`, `herald_delivery_attempts_total{kind="wecom_bot",result="unreachable"} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, `kind="wecom_bot",result="retry_after"`) {
		t.Errorf("a refused connection is counted as retry_after")
	}
	if strings.Contains(text, dead) || strings.Contains(text, wecomKey) {
		t.Errorf("/metrics carries the robot's address or key")
	}
}
