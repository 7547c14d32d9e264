package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCP_PipedRequestsAreAllAnsweredBeforeExit pipes a whole session
// into `herald mcp` and closes its input, as `printf '…' | herald mcp`
// does: every request read before the end of input gets its reply,
// including a tool call still talking to the service.
func TestMCP_PipedRequestsAreAllAnsweredBeforeExit(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	tokFile := filepath.Join(t.TempDir(), "helper.token")
	cli(t, dataDir, "agent", "token", "helper", "--out", tokFile)
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}`,
	}, "\n") + "\n"
	out, errOut, code := runWithInput(t, t.TempDir(), nil, input, "mcp", "--token-file", tokFile, "--data-dir", dataDir)
	if code != 0 {
		t.Fatalf("herald mcp: exit %d\nstderr: %s", code, errOut)
	}
	got := map[float64]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		got[m.ID] = m.Result
	}
	for _, id := range []float64{1, 2, 3} {
		if got[id] == nil {
			t.Fatalf("no reply to request %v; stdout:\n%s\nstderr:\n%s", id, out, errOut)
		}
	}
	if !strings.Contains(string(got[3]), "task(s) of agent:helper") {
		t.Fatalf("list_tasks reply: %s", got[3])
	}
}
