package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var reRequestID = regexp.MustCompile(`\br-[0-9a-f]{6}\b`)

// TestCLI_RequestsListShowsWhatWaitsForAnAdmin: a person's watch that
// needs approval is listed by `herald requests list` with its request id,
// requester and source, and approving it takes it off the list.
func TestCLI_RequestsListShowsWhatWaitsForAnAdmin(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out, errOut, code := chatCLI(t, dataDir, "alice", "/watch "+f.url()+" every 1h name \"Alice's feed\"\n")
	rid := reRequestID.FindString(out)
	if code != 0 || rid == "" {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	list := cli(t, dataDir, "requests", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "REQUEST") || !strings.HasPrefix(lines[1], rid) ||
		!strings.Contains(lines[1], "console:alice") || !strings.Contains(lines[1], "127.0.0.1") {
		t.Fatalf("requests list:\n%s", list)
	}
	var rows []map[string]json.RawMessage
	cliJSON(t, dataDir, &rows, "requests", "list")
	if len(rows) != 1 {
		t.Fatalf("requests list --json: %d rows", len(rows))
	}
	requireKeys(t, "requests list", rows[0], "id", "task", "name", "by", "at", "source_url", "source", "schedule", "notify")
	cli(t, dataDir, "requests", "approve", rid)
	if list := cli(t, dataDir, "requests", "list"); strings.Contains(list, rid) {
		t.Errorf("an approved request is still listed:\n%s", list)
	}
}

// TestCLI_TablesKeepColumnsWithCJKNames: a task named in Chinese (two
// terminal cells a character) keeps every later column of `tasks list`
// where the header puts it.
func TestCLI_TablesKeepColumnsWithCJKNames(t *testing.T) {
	a, b := newFeed(t), newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	chatCLI(t, dataDir, "admin", "/watch "+a.url()+" every 1h name \"维护公告\"\n/watch "+b.url()+" every 2h name \"News\"\n")
	out := cli(t, dataDir, "tasks", "list")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("tasks list:\n%s", out)
	}
	col := func(line, word string) int {
		i := strings.Index(line, word)
		if i < 0 {
			t.Fatalf("%q lacks %q", line, word)
		}
		return displayWidth(line[:i])
	}
	want := col(lines[0], "STATE")
	for _, l := range lines[1:] {
		if got := col(l, "active"); got != want {
			t.Errorf("the state column is at cell %d, the header's at %d:\n%s", got, want, out)
		}
	}
}
