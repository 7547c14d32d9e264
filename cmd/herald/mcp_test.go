package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession starts `herald mcp` for tokFile against dataDir and connects
// an MCP client of the official SDK to it.
func mcpSession(t *testing.T, dataDir, tokFile string) (*mcp.ClientSession, *exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(heraldBin, "mcp", "--token-file", tokFile, "--data-dir", dataDir)
	cmd.Env = childEnv()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "herald-test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to herald mcp: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd, stderr
}

// callTool calls a tool and decodes its structured content into out.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if out != nil && !res.IsError {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, raw, err)
		}
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCP_AgentRequestApprovedInChatThenRevoked drives the real `herald
// mcp` with the SDK's own client against a running service: the agent
// lists its tools, requests a watch, sees it pending; the admin approves
// it in chat, seeing agent:helper as the requester; the agent sees it
// active and gets its inbox; after the admin revokes the token every call
// fails with a clear error, and the server exits cleanly when its stdin
// closes.
func TestMCP_AgentRequestApprovedInChatThenRevoked(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	tokFile := filepath.Join(t.TempDir(), "helper.token")
	out := cli(t, dataDir, "agent", "token", "helper", "--out", tokFile)
	if !strings.Contains(out, "token for agent:helper written to "+tokFile) {
		t.Fatalf("agent token: %s", out)
	}
	if fi, err := os.Stat(tokFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}
	tokRaw, _ := os.ReadFile(tokFile)
	tok := strings.TrimSpace(string(tokRaw))
	if out := cli(t, dataDir, "agent", "list"); !strings.Contains(out, "agent:helper") || strings.Contains(out, tok) {
		t.Fatalf("agent list: %s", out)
	}

	cs, cmd, stderr := mcpSession(t, dataDir, tokFile)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		ro := tl.Annotations != nil && tl.Annotations.ReadOnlyHint
		if want := tl.Name != "request_watch"; ro != want {
			t.Errorf("%s: readOnlyHint %v, want %v", tl.Name, ro, want)
		}
		if tl.InputSchema == nil || tl.OutputSchema == nil {
			t.Errorf("%s: schemas in %v out %v", tl.Name, tl.InputSchema, tl.OutputSchema)
		}
	}
	slices.Sort(names)
	if want := []string{"get_task", "list_inbox", "list_tasks", "request_watch"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want exactly %v", names, want)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "request_watch" {
			a := tl.Annotations
			if a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("request_watch annotations %+v", a)
			}
			schema, _ := json.Marshal(tl.InputSchema)
			for _, want := range []string{`"url"`, `"schedule"`, `"kind"`, `"remind_before"`, `"required":["url"]`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("request_watch input schema lacks %s: %s", want, schema)
				}
			}
		}
	}

	var req struct {
		RequestID string `json:"request_id"`
		TaskID    string `json:"task_id"`
		State     string `json:"state"`
	}
	res := callTool(t, cs, "request_watch", map[string]any{"url": f.url(), "schedule": "every 1h", "name": "omni"}, &req)
	if res.IsError || req.State != "pending_approval" || !strings.Contains(resultText(res), "awaits an admin's approval") {
		t.Fatalf("request_watch: %+v %s", req, resultText(res))
	}
	var detail struct {
		State string `json:"state"`
		Scope *struct {
			Host string `json:"host"`
			By   string `json:"by"`
		} `json:"scope"`
		Recipients []string `json:"recipients"`
	}
	callTool(t, cs, "get_task", map[string]any{"id": req.RequestID}, &detail)
	if detail.State != "pending_approval" || detail.Scope != nil {
		t.Fatalf("before approval: %+v", detail)
	}

	var adminOut string
	eventually(t, "the approval prompt in console:admin's outbox", func() bool {
		o, _, _ := chatCLI(t, dataDir, "admin", "")
		adminOut += o
		return strings.Contains(adminOut, "[Approve → /approve "+req.RequestID+"]")
	})
	if !strings.Contains(adminOut, "Request "+req.RequestID+" from agent:helper") {
		t.Errorf("the admin does not see who asked:\n%s", adminOut)
	}
	if o, _, code := chatCLI(t, dataDir, "admin", "/approve "+req.RequestID+"\n"); code != 0 || !strings.Contains(o, "Approved "+req.RequestID) {
		t.Fatalf("approve: %d %s", code, o)
	}

	callTool(t, cs, "get_task", map[string]any{"id": req.TaskID}, &detail)
	if detail.State != "active" || detail.Scope == nil || detail.Scope.By != "console:admin" ||
		!slices.Equal(detail.Recipients, []string{"inbox:agent:helper"}) {
		t.Fatalf("after approval: %+v", detail)
	}
	var list struct {
		Principal string `json:"principal"`
		Tasks     []struct{ ID, State string }
	}
	callTool(t, cs, "list_tasks", nil, &list)
	if list.Principal != "agent:helper" || len(list.Tasks) != 1 || list.Tasks[0].ID != req.TaskID {
		t.Fatalf("list_tasks: %+v", list)
	}
	eventually(t, "the baseline notice in the agent's inbox", func() bool {
		res := callTool(t, cs, "list_inbox", nil, nil)
		return !res.IsError && strings.Contains(resultText(res), "data from the watched sources") && strings.Contains(resultText(res), "<source-data>")
	})

	cli(t, dataDir, "agent", "revoke", "helper")
	for name, args := range map[string]map[string]any{"list_tasks": nil, "get_task": {"id": req.TaskID}, "request_watch": {"url": f.url()}, "list_inbox": nil} {
		res := callTool(t, cs, name, args, nil)
		if !res.IsError || !strings.Contains(resultText(res), "revoked") {
			t.Errorf("%s after revoke: error %v %q", name, res.IsError, resultText(res))
		}
	}
	if o, _, _ := run(t, "agent", "list", "--data-dir", dataDir); strings.Contains(o, "agent:helper") {
		t.Errorf("revoked agent still listed: %s", o)
	}

	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("herald mcp did not exit cleanly when stdin closed: %v\nstderr: %s", cmd.ProcessState, stderr.String())
	}
	if strings.Contains(stderr.String(), tok) {
		t.Error("the token reached the MCP server's log (I10)")
	}
}

// TestMCP_StdoutCarriesOnlyProtocol: every line `herald mcp` writes to
// stdout is a JSON-RPC message, even when the service is not running and
// calls fail; at the end of stdin it exits 0.
func TestMCP_StdoutCarriesOnlyProtocol(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "t")
	if err := os.WriteFile(tokFile, []byte("hag_0000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"approve","arguments":{"id":"r-1"}}}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, "mcp", "--token-file", tokFile, "--data-dir", filepath.Join(t.TempDir(), "none"))
	cmd.Env = childEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, in); err != nil {
		t.Fatal(err)
	}
	answers := map[float64]map[string]any{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for len(answers) < 4 && sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		if id, ok := msg["id"].(float64); ok {
			answers[id] = msg
		}
	}
	if len(answers) != 4 {
		t.Fatalf("answers to %d requests, want 4: %v\nstderr: %s", len(answers), answers, stderr.String())
	}
	_ = stdin.Close()
	rest, _ := io.ReadAll(stdout)
	if len(bytes.TrimSpace(rest)) != 0 {
		t.Errorf("stdout after the answers: %q", rest)
	}
	if code := exitCode(cmd.Wait()); code != 0 {
		t.Fatalf("exit %d after stdin closed\nstderr: %s", code, stderr.String())
	}
	call, _ := json.Marshal(answers[3])
	if !strings.Contains(string(call), `"isError":true`) || !strings.Contains(string(call), "herald is not running") {
		t.Errorf("a call without a service: %s", call)
	}
	if _, ok := answers[4]["error"]; !ok {
		t.Errorf("an approve tool exists: %v", answers[4])
	}
}

// TestAgentCLI_TokenShownOnceAndNamesChecked: the token goes to stdout
// once, the notice to stderr; a bad name is refused plainly.
func TestAgentCLI_TokenShownOnceAndNamesChecked(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out, errOut, code := run(t, "agent", "token", "desk", "--data-dir", dataDir)
	if code != 0 || !strings.HasPrefix(out, "hag_") || !strings.Contains(errOut, "only time the token of agent:desk is shown") {
		t.Fatalf("token: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, "agent", "token", "a/b", "--data-dir", dataDir); code != exitFailure || !strings.Contains(errOut, "agent name") {
		t.Errorf("bad name: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "agent", "revoke", "nobody", "--data-dir", dataDir); code != exitFailure || !strings.Contains(errOut, `agent "nobody" has no token`) {
		t.Errorf("revoke unknown: %d %s", code, errOut)
	}
	if _, _, code := run(t, "agent", "--data-dir", dataDir); code != exitUsage {
		t.Errorf("no subcommand: %d", code)
	}
	if _, _, code := run(t, "mcp", "--data-dir", dataDir); code != exitUsage {
		t.Errorf("mcp without --token-file: %d", code)
	}
}
