package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// auditLines are the serve log's audit lines.
func auditLines(t *testing.T, log string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `"audit"`) {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		row := map[string]string{}
		for k, v := range m {
			if s, ok := v.(string); ok {
				row[k] = s
			}
		}
		if row["message"] == "audit" {
			out = append(out, row)
		}
	}
	return out
}

// TestAudit_OneLinePerAdminAct: approving (CLI), rejecting and pausing
// (chat), deleting (CLI), signing in to the console and issuing an agent
// token each leave exactly one audit line naming the act, who did it and
// the task, and none carries a token.
func TestAudit_OneLinePerAdminAct(t *testing.T) {
	r := newConsoleRig(t)
	a := requestWatch(t, r.dataDir, r.feed.url()+"?a=1")
	b := requestWatch(t, r.dataDir, r.feed.url()+"?b=1")
	ta, tb := "t-"+strings.TrimPrefix(a, "r-"), "t-"+strings.TrimPrefix(b, "r-")
	cli(t, r.dataDir, "requests", "approve", a)
	if out, _, code := chatCLI(t, r.dataDir, "admin", "/reject "+b+" not now\n/pause "+ta+"\n"); code != 0 {
		t.Fatalf("chat: %s", out)
	}
	cli(t, r.dataDir, "tasks", "delete", ta)
	_, _, cookie := consoleClient(t, r)
	tok := cli(t, r.dataDir, "agent", "token", "helper")

	want := []map[string]string{
		{"audit": "approve", "by": "cli", "task": ta, "request": a},
		{"audit": "reject", "by": "console:admin", "task": tb, "request": b, "reason": "not now"},
		{"audit": "pause", "by": "console:admin", "task": ta},
		{"audit": "delete", "by": "cli", "task": ta},
		{"audit": "console_sign_in", "by": "console:admin"},
		{"audit": "agent_token", "by": "cli", "agent": "agent:helper"},
	}
	var got []map[string]string
	eventually(t, "six audit lines", func() bool {
		got = auditLines(t, r.p.log.String())
		return len(got) >= len(want)
	})
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("audit line %d: %s = %q, want %q (%v)", i, k, got[i][k], v, got[i])
			}
		}
	}
	log := r.p.log.String()
	for _, secret := range []string{strings.Fields(tok + " x")[0], cookieValue(cookie)} {
		if secret != "" && strings.Contains(log, secret) {
			t.Errorf("the log carries a token")
		}
	}
}

// cookieValue is the value of a Set-Cookie header.
func cookieValue(h string) string {
	v, _, _ := strings.Cut(h, ";")
	_, v, _ = strings.Cut(v, "=")
	return v
}
