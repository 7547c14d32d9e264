package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/conversation/assistant/assistanttest"
	"github.com/herald-bridge/herald/delivery/egress"
)

// TestServe_AssistantDraftsAndReloadSwitchesIt: with an assistant section
// the real binary puts plain text to the model and shows the draft; the
// person's "yes" makes an ordinary pending request. SIGHUP without the
// section switches the assistant off (the short help again, no call), and
// back on. The key reaches only the model, never the log.
func TestServe_AssistantDraftsAndReloadSwitchesIt(t *testing.T) {
	const key = "sk-live-serve-test-a1b2c3d4e5f60718"
	model := assistanttest.New(t, key)
	f := newFeed(t)
	model.Answer(assistanttest.JSON(map[string]any{"action": "draft", "url": f.url(), "schedule": "every 1h"}))
	base := adjustExample(t, freeAddr(t), nil)
	section := "\nassistant:\n  endpoint: \"" + model.URL + "\"\n  api_key: \"${HERALD_ASSISTANT_KEY}\"\n  model: small-model\n  max_per_hour: 5\n"
	p, dataDir := startServe(t, base+section, "HERALD_ASSISTANT_KEY="+key)

	out, errOut, code := chatCLI(t, dataDir, "alice", "please keep an eye on my course feed, hourly\nyes\n/tasks\n")
	if code != 0 {
		t.Fatalf("chat exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"I can send this request for you:", "/watch " + f.url() + " every 1h",
		"Request r-", "awaits an admin's approval", "[pending approval]"} {
		if !strings.Contains(out, want) {
			t.Errorf("alice's session lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[Send →") {
		t.Errorf("the console has no buttons to press:\n%s", out)
	}
	if n := model.Calls(); n != 1 || model.Last(t).User() != "please keep an eye on my course feed, hourly" {
		t.Fatalf("model calls = %d, want the one plain message", n)
	}

	reload := func(cfg string, n int) {
		t.Helper()
		if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the reload is applied", func() bool { return strings.Count(p.log.String(), "configuration reloaded") == n })
	}
	reload(base, 1)
	out, _, _ = chatCLI(t, dataDir, "alice", "please keep an eye on another feed\n")
	if !strings.Contains(out, "I understand commands.") || strings.Contains(out, "unavailable") {
		t.Errorf("with the assistant off: %s", out)
	}
	if n := model.Calls(); n != 1 {
		t.Errorf("model calls with the assistant off = %d, want still 1", n)
	}
	reload(base+section, 2)
	model.Answer(assistanttest.JSON(map[string]any{"action": "explain", "text": "Send /tasks to see them."}))
	out, _, _ = chatCLI(t, dataDir, "alice", "what do I have?\n")
	if !strings.Contains(out, "Send /tasks to see them.") || model.Calls() != 2 {
		t.Errorf("with the assistant back on (calls %d): %s", model.Calls(), out)
	}

	logs := p.log.String()
	if !strings.Contains(logs, "assistant on") {
		t.Errorf("the log does not say the assistant is on:\n%s", logs)
	}
	if strings.Contains(logs, key) || strings.Contains(out, key) {
		t.Errorf("the key leaked into the log or chat")
	}
}

// assistant.local reaches a model server on a private address without
// policy.allow_private_networks: exactly that destination is trusted, and
// the same endpoint without local is refused (sources stay guarded).
func TestAssistantLocalEndpointIsTheOnlyPrivateDestination(t *testing.T) {
	const key = "sk-local-model-test-0011223344"
	model := assistanttest.New(t, key) // http on 127.0.0.1
	cfg := &configs.Config{Assistant: configs.Assistant{Enabled: true, Local: true,
		Endpoint: model.URL, APIKey: key, Model: "local-model", Timeout: configs.Duration(5 * time.Second)}}
	a := newAssistant(cfg, func(string) *egress.Route { return nil }, zerolog.Nop(), &assistant.Notices{})
	if a == nil {
		t.Fatal("a local assistant was not built")
	}
	s, err := a.Interpret(context.Background(), conversation.Ask{Text: "what do I watch?", Lang: "en", Zone: "UTC"})
	if err != nil || s.Action != conversation.SuggestList || model.Calls() != 1 {
		t.Fatalf("Interpret = %+v, %v after %d calls; want the list answer", s, err, model.Calls())
	}

	cfg.Assistant.Local = false
	if a := newAssistant(cfg, func(string) *egress.Route { return nil }, zerolog.Nop(), &assistant.Notices{}); a != nil {
		if _, err := a.Interpret(context.Background(), conversation.Ask{Text: "again", Lang: "en", Zone: "UTC"}); err == nil {
			t.Fatal("a private endpoint was reached without local: true or allow_private_networks")
		}
	}
	if model.Calls() != 1 {
		t.Fatalf("the model saw %d calls, want 1", model.Calls())
	}
}
