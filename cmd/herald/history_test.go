package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestHistory_CLISearchListAndRestartKeepsIt: turns typed in `herald chat`
// are kept per principal; an admin reads them with `herald history`
// through the admin API; a restart of the service keeps them.
func TestHistory_CLISearchListAndRestartKeepsIt(t *testing.T) {
	p, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	if _, _, code := chatCLI(t, dataDir, "alice", "期末考试的通知在哪里？\n/tasks\n"); code != 0 {
		t.Fatalf("alice's chat exit %d", code)
	}
	if _, _, code := chatCLI(t, dataDir, "bob", "bob asks about 考试 too\n"); code != 0 {
		t.Fatalf("bob's chat exit %d", code)
	}

	var page historyPage
	cliJSON(t, dataDir, &page, "history", "search", "console:alice", "考试")
	if page.Log != "console:alice" || page.Page != 1 || page.More || len(page.Turns) != 1 ||
		page.Turns[0].Text != "期末考试的通知在哪里？" || page.Turns[0].Principal != "console:alice" || page.Turns[0].Reply == "" {
		t.Fatalf("search page = %+v", page)
	}
	out := cli(t, dataDir, "history", "list", "console:alice")
	for _, want := range []string{"ID", "WHEN", "console:alice", "/tasks", "期末考试"} {
		if !strings.Contains(out, want) {
			t.Errorf("history list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bob") {
		t.Errorf("alice's history shows bob's turn:\n%s", out)
	}

	// A restart keeps the history and its index.
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exit %d on SIGTERM", code)
	}
	startServeAt(t, p.cfgPath, dataDir)
	cliJSON(t, dataDir, &page, "history", "search", "console:bob", "考试")
	if len(page.Turns) != 1 || page.Turns[0].Principal != "console:bob" {
		t.Fatalf("after restart, bob's search = %+v", page)
	}
	// The person forgets; the admin then finds nothing.
	if _, _, code := chatCLI(t, dataDir, "bob", "/forget\n"); code != 0 {
		t.Fatalf("bob's /forget exit %d", code)
	}
	if out := cli(t, dataDir, "history", "search", "console:bob", "考试"); !strings.Contains(out, "no turns") {
		t.Fatalf("after /forget:\n%s", out)
	}

	_, errOut, code := run(t, "history", "search", "nobody", "x", "--data-dir", dataDir)
	if code == 0 || !strings.Contains(errOut, "give a principal") {
		t.Fatalf("bad principal: exit %d, %q", code, errOut)
	}
	if _, _, code := run(t, "history", "search", "console:alice", "--data-dir", dataDir); code != exitUsage {
		t.Fatalf("search without words: exit %d", code)
	}
}
