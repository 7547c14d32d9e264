package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/watch"
)

func TestCheckConfig_UnknownKeyOnLine12ExitsOneWithFileLine(t *testing.T) {
	cfg := strings.Join([]string{
		"# herald test config", // 1
		"server:",              // 2
		"  listen: 127.0.0.1:8080",
		"store:",
		"  driver: bolt", // 5
		"timezone: UTC",
		"language: en",
		"policy:",
		`  admins: ["console:admin"]`,
		`  requesters: ["console:*"]`, // 10
		`  allowed_hosts: []`,
		`  alowed_hosts: ["*.example.edu"]`, // 12: the typo
		"",
	}, "\n")
	path := writeConfig(t, cfg)
	out, errOut, code := run(t, "check-config", "--config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, path+":12:") || !strings.Contains(errOut, "alowed_hosts") {
		t.Errorf("stderr does not point at %s:12 and the key:\n%s", path, errOut)
	}
	if out != "" {
		t.Errorf("problems go to stderr, stdout has: %q", out)
	}
}

func TestCheckConfig_ValidFileExitsZeroWithOneLineSummary(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "herald.example.yaml")
	out, errOut, code := run(t, "check-config", "--config", path)
	if code != 0 {
		t.Fatalf("the reference config: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], path+": ok") {
		t.Errorf("stdout is not a one-line summary:\n%s", out)
	}
	// Warnings (channels off without tokens) go to stderr, not the summary.
	if !strings.Contains(errOut, "warning") {
		t.Errorf("no warning for the channels switched off: %q", errOut)
	}
}

func TestCheckConfig_EveryProblemAtOnce(t *testing.T) {
	cfg := "server:\n  listen: 127.0.0.1:8080\n  bogus: 1\nstore:\n  driver: bolt\n  nope: 2\ntimezone: Mars/Base\n"
	path := writeConfig(t, cfg)
	_, errOut, code := run(t, "check-config", "--config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{path + ":3:", path + ":6:", path + ":7:"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestCLI_HelpExplainsEveryCommand(t *testing.T) {
	cases := [][]string{{"--help"}, {"-h"}, {"help"}}
	for _, c := range commands() {
		cases = append(cases, []string{c.name, "--help"})
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstderr: %s", code, errOut)
			}
			if !strings.Contains(out, "Usage:") {
				t.Errorf("stdout has no usage:\n%s", out)
			}
			if len(args) == 2 && !strings.Contains(out, "herald "+args[0]) {
				t.Errorf("help does not name the command:\n%s", out)
			}
			if errOut != "" {
				t.Errorf("help wrote to stderr: %q", errOut)
			}
		})
	}
}

func TestCLI_UsageErrorsExitTwoOnStderr(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"tasks", "list", "--bogus"}, "flag provided but not defined: -bogus"},
		{"unknown flag of serve", []string{"serve", "--port", "9"}, "flag provided but not defined: -port"},
		{"unknown global flag", []string{"--bogus"}, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"no command", nil, "Usage:"},
		{"unknown subcommand", []string{"tasks", "explode", "x"}, `unknown subcommand "explode"`},
		{"missing id", []string{"tasks", "show"}, "exactly one task id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := run(t, c.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, out, errOut)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, errOut)
			}
			if out != "" {
				t.Errorf("a usage error wrote to stdout: %q", out)
			}
			if n := strings.Count(strings.TrimSpace(errOut), "\n") + 1; c.args != nil && n > 3 {
				t.Errorf("the usage error is not short (%d lines):\n%s", n, errOut)
			}
		})
	}
}

func TestCLI_TasksListWithServiceStoppedExits3WithHint(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	out, errOut, code := run(t, "tasks", "list", "--data-dir", dataDir)
	if code != exitNotRunning {
		t.Fatalf("exit %d, want %d", code, exitNotRunning)
	}
	if !strings.Contains(errOut, "not running") || !strings.Contains(errOut, "herald serve") {
		t.Errorf("stderr has no hint:\n%s", errOut)
	}
	if out != "" {
		t.Errorf("stdout: %q", out)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the CLI created the data dir: %v", err)
	}
}

func TestCLI_LedgerRedeliverWithoutYesOffTerminalRefuses(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	var fxs []effectRow
	cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
	if len(fxs) == 0 {
		t.Fatal("the baseline run claimed no effect")
	}
	before := fxs[0]
	_, errOut, code := run(t, "ledger", "redeliver", before.ID, "--data-dir", dataDir)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(errOut, "--yes") {
		t.Errorf("stderr does not say how to confirm:\n%s", errOut)
	}
	cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
	if fxs[0].Attempts != before.Attempts || fxs[0].State != before.State {
		t.Errorf("a refused redeliver changed the effect: %+v → %+v", before, fxs[0])
	}
}

func TestCLI_TasksRunWaitsForTheOutcome_NoWaitReturnsAtOnce(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")

	fx.feed.addItem("omni-extra-1", "An extra episode")
	out := cli(t, dataDir, "tasks", "run", "news")
	if !strings.HasPrefix(out, "news: ok — 5 items, 1 new,") {
		t.Errorf("tasks run did not print the outcome:\n%s", out)
	}

	// Hold the feed: a waiting run could not return, --no-wait must.
	hit := fx.feed.close()
	out = cli(t, dataDir, "tasks", "run", "news", "--no-wait")
	if !strings.Contains(out, "check of news started") {
		t.Errorf("--no-wait output: %q", out)
	}
	<-hit // the check is in progress, held at the feed
	fx.feed.open()
	eventually(t, "the no-wait run finishes", func() bool {
		var d struct {
			Runs []tasks.RunRecord `json:"runs"`
		}
		out := cli(t, dataDir, "tasks", "show", "news", "--json")
		_ = json.Unmarshal([]byte(out), &d)
		return len(d.Runs) >= 3
	})
}

// seedRequest records a pending request by console:bob in the store of a
// service that is not running yet, as a chat request would; it returns the
// request id.
func seedRequest(t *testing.T, dataDir, url string) string {
	t.Helper()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(dataDir, "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Options{
		Store: st, Log: zerolog.Nop(),
		Sources: tasks.SourceOpenerFunc(func(watch.Spec, *time.Location) (tasks.Source, error) {
			return nil, errors.New("not used")
		}),
		Policy: tasks.Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"}, AllowPrivate: true,
			Limits: tasks.Limits{MaxTasks: 50, HistoryRuns: 30, MaxItemsPerRun: 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := eng.Catalog
	task, err := m.Submit(context.Background(), tasks.Submission{Principal: "console:bob", URL: url, Kind: "rss", Schedule: "every 1h", Name: "Bob's feed"})
	if err != nil {
		t.Fatal(err)
	}
	if task.State != tasks.PendingApproval {
		t.Fatalf("seeded request is %s", task.State)
	}
	return task.Request.ID
}

func TestCLI_JSONOutputHasTheDocumentedShape(t *testing.T) {
	fx := newFixture(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	reqID := seedRequest(t, dataDir, fx.feed.url()+"?bob")
	p := startServeAt(t, writeConfig(t, fx.config(t, "")), dataDir, hookSecretEnv+"="+hookSecret)
	waitBaseline(t, dataDir, "news")

	t.Run("status", func(t *testing.T) {
		var st statusView
		cliJSON(t, dataDir, &st, "status")
		if !st.Owner || !st.StoreOK || st.Store != "bolt" || st.Listen != p.addr || st.Tasks != 2 {
			t.Errorf("status = %+v", st)
		}
	})

	t.Run("tasks list", func(t *testing.T) {
		out := cli(t, dataDir, "tasks", "list", "--json")
		rows := keysOf(t, out)
		if len(rows) != 2 {
			t.Fatalf("want the declared task and the request, got %s", out)
		}
		for i, r := range rows {
			requireKeys(t, fmt.Sprintf("tasks list[%d]", i), r, "id", "name", "state", "owner", "schedule", "next_run", "last_outcome", "source")
		}
		got := listTasks(t, dataDir)
		if n := got["news"]; n.Name != "Omni news" || n.State != "active" || n.Owner != "console:admin" || n.Schedule != "every 30m" || n.NextRun == nil || n.LastOutcome != "baseline" {
			t.Errorf("news = %+v", n)
		}
		var pending *taskRow
		for _, r := range got {
			if r.Owner == "console:bob" {
				pending = &r
			}
		}
		if pending == nil || pending.State != "pending_approval" || pending.NextRun != nil {
			t.Errorf("the seeded request = %+v", pending)
		}
	})

	t.Run("requests approve", func(t *testing.T) {
		var v taskRow
		cliJSON(t, dataDir, &v, "requests", "approve", reqID)
		if v.State != "active" || v.Owner != "console:bob" {
			t.Errorf("approved = %+v", v)
		}
		_, errOut, code := run(t, "requests", "approve", reqID, "--data-dir", dataDir)
		if code != exitFailure || !strings.Contains(errOut, "already active") {
			t.Errorf("approving twice: exit %d, %s", code, errOut)
		}
	})

	t.Run("tasks show/pause/resume/run", func(t *testing.T) {
		var d struct {
			taskRow
			Request  tasks.Request     `json:"request"`
			Decision *tasks.Decision   `json:"decision"`
			Grant    *tasks.Grant      `json:"grant"`
			Source   string            `json:"source_url"`
			Kind     string            `json:"kind"`
			Notify   []string          `json:"notify"`
			Failures int               `json:"failures"`
			Runs     []tasks.RunRecord `json:"runs"`
			Next     *tasks.NextCheck  `json:"next_check"`
		}
		cliJSON(t, dataDir, &d, "tasks", "show", "news")
		if d.ID != "news" || d.Source != fx.feed.url() || d.Kind != "rss" || !slices.Equal(d.Notify, []string{"admin-inbox"}) || len(d.Runs) == 0 || d.Grant == nil ||
			d.Next == nil || d.Next.Why != tasks.NextBySchedule {
			t.Errorf("tasks show = %+v", d)
		}
		// Run first: resuming schedules a check at once, which would race
		// this one for the new item.
		fx.feed.addItem("omni-json-1", "A new episode")
		var r tasks.RunRecord
		cliJSON(t, dataDir, &r, "tasks", "run", "news")
		if r.TaskID != "news" || r.Outcome != "ok" || r.New != 1 || r.Effects != 1 {
			t.Errorf("run = %+v", r)
		}
		var v taskRow
		cliJSON(t, dataDir, &v, "tasks", "pause", "news")
		if v.State != "paused" || v.NextRun != nil {
			t.Errorf("paused = %+v", v)
		}
		cliJSON(t, dataDir, &v, "tasks", "resume", "news")
		if v.State != "active" {
			t.Errorf("resumed = %+v", v)
		}
	})

	var effect effectRow
	t.Run("ledger show", func(t *testing.T) {
		out := cli(t, dataDir, "ledger", "show", "news", "--json")
		rows := keysOf(t, out)
		if len(rows) < 2 {
			t.Fatalf("want the baseline confirmation and the new item, got %s", out)
		}
		for i, r := range rows {
			requireKeys(t, fmt.Sprintf("ledger show[%d]", i), r, "id", "key", "task", "recipient", "state", "attempts", "updated_at", "error")
		}
		var fxs []effectRow
		cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
		for _, f := range fxs {
			if f.Task != "news" || (f.Recipient != "inbox:console:admin" && f.Recipient != "admin-inbox") || f.ID == "" || f.UpdatedAt.IsZero() ||
				!slices.Contains([]string{"pending", "completed", "failed", "unknown"}, f.State) {
				t.Errorf("effect = %+v", f)
			}
		}
		effect = fxs[0]
	})

	t.Run("ledger redeliver --yes", func(t *testing.T) {
		var f effectRow
		cliJSON(t, dataDir, &f, "ledger", "redeliver", effect.ID, "--yes")
		if f.ID != effect.ID || f.Attempts < effect.Attempts {
			t.Errorf("redelivered = %+v (was %+v)", f, effect)
		}
		eventually(t, "the redelivery completes", func() bool {
			var fxs []effectRow
			cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
			for _, g := range fxs {
				if g.ID == effect.ID {
					return g.State == "completed" && g.Attempts > effect.Attempts
				}
			}
			return false
		})
	})

	t.Run("inbound hook", func(t *testing.T) {
		body := []byte(`{"title":"Build 42 passed","url":"https://ci.example.com/42"}`)
		req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
		req.Header = signHook(hookSecret, "msg_build42", time.Now(), body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /hooks/ci = %d, want 202", resp.StatusCode)
		}
		eventually(t, "the hook's effect completes", func() bool {
			var fxs []effectRow
			cliJSON(t, dataDir, &fxs, "ledger", "show", "ci")
			return len(fxs) == 1 && fxs[0].State == "completed"
		})
	})

	t.Run("send-test", func(t *testing.T) {
		out := cli(t, dataDir, "send-test", "inbox:console:admin")
		if !strings.Contains(out, "inbox:console:admin: completed") {
			t.Errorf("send-test: %q", out)
		}
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", "ops")
		if v.State != "completed" || v.Recipient != "ops" || v.Effect == "" {
			t.Errorf("send-test ops = %+v", v)
		}
		if got := fx.rcv.deliveries(); len(got) != 1 || !strings.HasPrefix(got[0].Get("webhook-signature"), "v1,") {
			t.Errorf("the webhook recipient got %v", got)
		}
	})

	t.Run("inbox", func(t *testing.T) {
		var items []inboxView
		cliJSON(t, dataDir, &items, "inbox", "list", "console:admin")
		// The baseline confirmation, the new item, the hook and the test push;
		// a redelivery to an inbox lands on the same item (keyed by effect).
		if len(items) != 4 {
			t.Fatalf("inbox has %d items: %+v", len(items), items)
		}
		titles := ""
		for _, it := range items {
			if it.ID == "" || it.Title == "" || it.CreatedAt.IsZero() || it.Read {
				t.Errorf("item = %+v", it)
			}
			titles += it.Title + "\n"
		}
		for _, want := range []string{"herald test push", "Build 42 passed", "A new episode"} {
			if !strings.Contains(titles+texts(items), want) {
				t.Errorf("inbox lacks %q:\n%s", want, titles)
			}
		}
		var n struct {
			Marked int `json:"marked"`
		}
		cliJSON(t, dataDir, &n, "inbox", "read", "console:admin", items[0].ID)
		if n.Marked != 1 {
			t.Errorf("read one: marked %d", n.Marked)
		}
		cliJSON(t, dataDir, &n, "inbox", "read", "console:admin", "all")
		if n.Marked != len(items)-1 {
			t.Errorf("read all: marked %d, want %d", n.Marked, len(items)-1)
		}
		var tok struct {
			Token string `json:"token"`
			URL   string `json:"url"`
		}
		cliJSON(t, dataDir, &tok, "inbox", "token", "console:admin")
		req, _ := http.NewRequest(http.MethodGet, p.url("/api/v1/inbox"), nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page map[string]json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/v1/inbox: %d %v", resp.StatusCode, err)
		}
		var got []map[string]any
		if err := json.Unmarshal(page["items"], &got); err != nil || len(got) != len(items) {
			t.Errorf("GET /api/v1/inbox items: %v, %d want %d", err, len(got), len(items))
		}
		if strings.Contains(p.log.String(), tok.Token) {
			t.Error("the inbox token is in the serve log")
		}
	})

	t.Run("tasks delete", func(t *testing.T) {
		id := "t-" + strings.TrimPrefix(reqID, "r-")
		var v taskRow
		cliJSON(t, dataDir, &v, "tasks", "delete", id)
		if v.State != "deleted" {
			t.Errorf("deleted = %+v", v)
		}
		if _, ok := listTasks(t, dataDir)[id]; ok {
			t.Error("a deleted task is still listed")
		}
	})
}

func texts(items []inboxView) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestI10_SecretsNeverInCLIOutputOrServeLogs(t *testing.T) {
	fx := newFixture(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := writeConfig(t, fx.config(t, ""))
	p := startServeAt(t, cfg, dataDir, hookSecretEnv+"="+hookSecret, "HERALD_LOG_LEVEL=debug")
	waitBaseline(t, dataDir, "news")

	// A hook with a bad signature, one with a good one, and pushes to the
	// secret-bearing recipient: every path that handles a secret.
	body := []byte(`{"title":"deploy","url":"https://ci.example.com/d"}`)
	for _, secret := range []string{"whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC0wMTIzNDU2Nzg=", hookSecret} {
		req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
		req.Header = signHook(secret, "msg_"+secret[6:12], time.Now(), body)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	cli(t, dataDir, "send-test", "ops")
	for _, args := range [][]string{
		{"status"}, {"status", "--json"}, {"tasks", "list"}, {"tasks", "show", "news"}, {"tasks", "show", "news", "--json"},
		{"ledger", "show", "news"}, {"ledger", "show", "ci", "--json"}, {"inbox", "list", "console:admin", "--json"},
	} {
		cli(t, dataDir, args...)
	}
	_, _, _ = run(t, "check-config", "--config", cfg)
	_, _, _ = run(t, "send-test", "inbox:nobody", "--data-dir", dataDir)
	// A reload, rejected and accepted.
	raw, _ := os.ReadFile(cfg)
	_ = os.WriteFile(cfg, append(raw, []byte("\nbogus: 1\n")...), 0o600)
	_, _, _ = run(t, "check-config", "--config", cfg)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, "the bad reload is rejected", func() bool { return strings.Contains(p.log.String(), "keeping the previous one") })
	_ = os.WriteFile(cfg, raw, 0o600)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, "the good reload is applied", func() bool { return strings.Contains(p.log.String(), "configuration reloaded") })

	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	_, _ = metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	if found := secretsIn(metrics.String()); len(found) > 0 {
		t.Errorf("/metrics contains secrets: %q", found)
	}
	// The embedded store's group commit is visible (batch size, busy time).
	for _, name := range []string{"herald_store_commits_total ", "herald_store_commit_writes_total ", "herald_store_commit_seconds_total "} {
		if !strings.Contains(metrics.String(), "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// Recipient addresses stay out of logs and metrics too: the webhook
	// URL, and the inbox address.
	for _, addr := range []string{fx.rcv.srv.URL, "inbox:console:admin", "inbox:nobody"} {
		if strings.Contains(metrics.String(), addr) {
			t.Errorf("/metrics names the recipient %s", addr)
		}
		if strings.Contains(p.log.String(), addr) {
			t.Errorf("the serve log names the recipient %s", addr)
		}
	}

	if code := p.signal(syscall.SIGINT); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if found := secretsIn(outputsOf(t).String()); len(found) > 0 {
		t.Errorf("CLI output contains secrets: %q", found)
	}
	if found := secretsIn(p.log.String()); len(found) > 0 {
		t.Errorf("the serve log contains secrets: %q", found)
	}
	if len(fx.rcv.deliveries()) == 0 {
		t.Error("the webhook recipient got nothing; the test exercised no secret")
	}
}

func TestCLI_EnvironmentSelectsConfigAndDataDir(t *testing.T) {
	cfg := writeConfig(t, adjustExample(t, freeAddr(t), nil))
	p := startServeAt(t, cfg, filepath.Join(t.TempDir(), "data"))
	cmd := exec.Command(heraldBin, "status")
	cmd.Env = childEnv("HERALD_DATA_DIR="+p.dataDir, "HERALD_CONFIG="+cfg)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "listening on "+p.addr) {
		t.Errorf("status with HERALD_DATA_DIR: %v\n%s", err, out)
	}
	cmd = exec.Command(heraldBin, "check-config")
	cmd.Env = childEnv("HERALD_CONFIG=" + cfg)
	out, err = cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), cfg+": ok") {
		t.Errorf("check-config with HERALD_CONFIG: %v\n%s", err, out)
	}
}

func TestCLI_StatusTextIsStable(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	// The service answers before its scheduler lease is taken; status is
	// stable once it owns scheduling.
	var first string
	waitFor(t, 30*time.Second, "ownership of scheduling", func() bool {
		first = cli(t, dataDir, "status")
		return strings.Contains(first, "owner:    yes")
	})
	for range 5 {
		if again := cli(t, dataDir, "status"); again != first {
			t.Fatalf("status output changes between calls:\n%s\n---\n%s", first, again)
		}
	}
	for _, want := range []string{"owner:    yes", "store:    bolt (ok: true)", "channel:  console", "channel:  feishu off", "channel:  telegram off"} {
		if !strings.Contains(first, want) {
			t.Errorf("status lacks %q:\n%s", want, first)
		}
	}
}

func TestCLI_UnknownTaskIsAFailureWithAPlainMessage(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	for _, args := range [][]string{{"tasks", "show", "t-nope"}, {"tasks", "pause", "t-nope"}, {"tasks", "run", "t-nope"}, {"requests", "approve", "r-nope"}} {
		out, errOut, code := run(t, append(args, "--data-dir", dataDir)...)
		if code != exitFailure || out != "" || !strings.Contains(errOut, "nope") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("herald %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
}

func TestCLI_TasksRunOfAFailingSourceExitsOneWithItsClass(t *testing.T) {
	fx := newFixture(t)
	denied := "  - id: private\n    source: {kind: rss, url: \"" + fx.feed.srv.URL + "/denied.xml\"}\n    schedule: every 1h\n    notify: [admin-inbox]\n"
	_, dataDir := startServe(t, fx.config(t, denied), hookSecretEnv+"="+hookSecret)
	out, _, code := run(t, "tasks", "run", "private", "--data-dir", dataDir)
	if code != exitFailure || !strings.HasPrefix(out, "private: failed") || !strings.Contains(out, "error class: auth") {
		t.Errorf("exit %d\n%s", code, out)
	}
	out, _, code = run(t, "tasks", "run", "private", "--json", "--data-dir", dataDir)
	var r tasks.RunRecord
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailure || r.Outcome != "failed" {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
}

func TestCLI_EmptyListsAreEmptyJSONArrays(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	for _, args := range [][]string{{"tasks", "list"}, {"ledger", "show", "hook:ci"}, {"inbox", "list", "console:nobody"}} {
		if out := cli(t, dataDir, append(args, "--json")...); strings.TrimSpace(out) != "[]" {
			t.Errorf("herald %s --json = %q, want []", strings.Join(args, " "), out)
		}
	}
}
