package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runIn runs the CLI in dir with extra environment and returns stdout,
// stderr and the exit code.
func runIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runWithInput(t, dir, env, "", args...)
}

// runWithInput is runIn with input on stdin (a pipe, not a terminal).
func runWithInput(t *testing.T, dir string, env []string, input string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	cmd.Dir, cmd.Env = dir, childEnv(env...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	if code == -1 {
		t.Fatalf("herald %s: could not run", strings.Join(args, " "))
	}
	outputsOf(t).add(stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

// jsonError decodes a --json error line from stderr.
func jsonError(t *testing.T, stderr string) (code, msg string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(stderr), &e); err != nil || e.Error.Code == "" {
		t.Fatalf("stderr is not a JSON error: %v\n%s", err, stderr)
	}
	return e.Error.Code, e.Error.Message
}

func TestCLI_JSONEverywhereWithErrorsCarryingAStableCode(t *testing.T) {
	cfgYAML := adjustExample(t, freeAddr(t), nil)
	p, dataDir := startServe(t, cfgYAML)

	var summary struct {
		File       string   `json:"file"`
		OK         bool     `json:"ok"`
		Recipients int      `json:"recipients"`
		Inbound    int      `json:"inbound"`
		Tasks      int      `json:"tasks"`
		Store      string   `json:"store"`
		Warnings   []string `json:"warnings"`
	}
	out, errOut, code := run(t, "check-config", "--config", p.cfgPath, "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &summary) != nil || !summary.OK || summary.Store != "bolt" || errOut != "" {
		t.Errorf("check-config --json: exit %d\n%s\n%s", code, out, errOut)
	}
	bad := writeConfig(t, "server:\n  listen: 127.0.0.1:1\n  bogus: 1\n")
	out, errOut, code = run(t, "check-config", "--config", bad, "--json")
	var cfgErr struct {
		Error struct {
			Code     string `json:"code"`
			Problems []struct {
				File    string `json:"file"`
				Line    int    `json:"line"`
				Message string `json:"message"`
			} `json:"problems"`
		} `json:"error"`
	}
	if code != exitFailure || out != "" || json.Unmarshal([]byte(errOut), &cfgErr) != nil || cfgErr.Error.Code != "invalid_config" ||
		len(cfgErr.Error.Problems) == 0 || cfgErr.Error.Problems[0].Line != 3 {
		t.Errorf("check-config --json of a bad file: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	var st statusView
	cliJSON(t, dataDir, &st, "status")
	if st.Listen != p.addr {
		t.Errorf("status --json = %+v", st)
	}

	cases := []struct {
		args     []string
		exit     int
		code     string
		contains string
	}{
		{[]string{"tasks", "show", "t-nope"}, exitFailure, "not_found", "t-nope"},
		{[]string{"tasks", "frob"}, exitUsage, "usage", "unknown subcommand"},
		{[]string{"ledger", "redeliver", "fx_nope", "--yes"}, exitFailure, "not_found", "no effect fx_nope"},
		{[]string{"tasks", "show"}, exitUsage, "usage", "exactly one task id"},
	}
	for _, c := range cases {
		out, errOut, code := run(t, append(c.args, "--json", "--data-dir", dataDir)...)
		if code != c.exit || out != "" {
			t.Errorf("herald %v --json: exit %d, stdout %q", c.args, code, out)
			continue
		}
		if got, msg := jsonError(t, errOut); got != c.code || !strings.Contains(msg, c.contains) {
			t.Errorf("herald %v --json: error %q %q, want code %q with %q", c.args, got, msg, c.code, c.contains)
		}
	}
	_, errOut, code = run(t, "tasks", "list", "--json", "--data-dir", filepath.Join(t.TempDir(), "none"))
	if got, _ := jsonError(t, errOut); code != exitNotRunning || got != "not_running" {
		t.Errorf("not running --json: exit %d, code %q", code, got)
	}
}

func TestCLI_UnknownSubcommandIsNamedWithTheList(t *testing.T) {
	cases := map[string][]string{
		"tasks":    {"list", "show", "pause", "resume", "delete", "run", "rebaseline"},
		"ledger":   {"show", "redeliver"},
		"inbox":    {"list", "read", "token"},
		"requests": {"approve", "reject"},
	}
	for cmd, subs := range cases {
		out, errOut, code := run(t, cmd, "frob")
		if code != exitUsage || out != "" {
			t.Errorf("herald %s frob: exit %d, stdout %q", cmd, code, out)
		}
		if !strings.Contains(errOut, `unknown subcommand "frob"`) || !strings.Contains(errOut, strings.Join(subs, ", ")) {
			t.Errorf("herald %s frob does not name it with the list:\n%s", cmd, errOut)
		}
	}
	_, errOut, _ := run(t, "frob")
	if !strings.Contains(errOut, "serve, check-config, chat") {
		t.Errorf("an unknown command does not list the commands:\n%s", errOut)
	}
}

func TestCLI_NotFoundSaysWhatInPlainWords(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "redeliver", "fx_nope", "--yes"}, "herald: no effect fx_nope\n"},
		{[]string{"inbox", "read", "console:admin", "12"}, "herald: no inbox item 12 for console:admin\n"},
	}
	for _, c := range cases {
		out, errOut, code := run(t, append(c.args, "--data-dir", dataDir)...)
		if code != exitFailure || out != "" || errOut != c.want {
			t.Errorf("herald %v: exit %d, stdout %q, stderr %q; want stderr %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestCLI_RedeliverNumbersAttemptsAsTheyHappen(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	var fxs []effectRow
	eventually(t, "the baseline confirmation is delivered", func() bool {
		cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
		return len(fxs) > 0 && fxs[0].State == "completed"
	})
	if fxs[0].Attempts != 1 {
		t.Fatalf("a delivered effect shows %d attempts", fxs[0].Attempts)
	}
	id := fxs[0].ID
	out := cli(t, dataDir, "ledger", "redeliver", id, "--yes")
	if !strings.Contains(out, "attempt 2 will follow") {
		t.Errorf("after one attempt: %q", out)
	}
	eventually(t, "the redelivery completes", func() bool {
		cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
		return fxs[0].State == "completed"
	})
	if fxs[0].Attempts != 2 {
		t.Errorf("after the redelivery the ledger shows %d attempts, want 2", fxs[0].Attempts)
	}
	out = cli(t, dataDir, "ledger", "redeliver", id, "--yes")
	if !strings.Contains(out, "attempt 3 will follow") {
		t.Errorf("after two attempts: %q", out)
	}
}

func TestCLI_InboxTokenPrintsTheRealAddress(t *testing.T) {
	p, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out := cli(t, dataDir, "inbox", "token", "console:admin")
	if want := "http://" + p.addr + "/api/v1/inbox"; !strings.Contains(out, want) || strings.Contains(out, "<listen>") {
		t.Errorf("inbox token does not print %s:\n%s", want, out)
	}
}

func TestCLI_GlobalFlagsBeforeOrAfterTheCommandWords(t *testing.T) {
	p, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	for _, args := range [][]string{
		{"--data-dir", dataDir, "status"},
		{"--data-dir=" + dataDir, "--json", "status"},
		{"--json", "status", "--data-dir", dataDir},
		{"status", "--data-dir", dataDir},
	} {
		out, errOut, code := run(t, args...)
		if code != exitOK || !strings.Contains(out, p.addr) {
			t.Errorf("herald %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	out, _, _ := run(t, "--json", "--data-dir", dataDir, "tasks", "list")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("--json before the command: %q", out)
	}
}

func TestCLI_FindsTheServiceFromAnotherDirectory(t *testing.T) {
	state := "XDG_STATE_HOME=" + t.TempDir()
	cfg := writeConfig(t, adjustExample(t, freeAddr(t), nil))
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, cfg, dataDir, state)
	elsewhere := t.TempDir()
	out, errOut, code := runIn(t, elsewhere, []string{state}, "status")
	if code != exitOK || !strings.Contains(out, p.addr) {
		t.Fatalf("status from another directory: exit %d\n%s%s", code, out, errOut)
	}
	if code := p.signal(15); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	_, errOut, code = runIn(t, elsewhere, []string{state}, "status")
	if code != exitNotRunning || !strings.Contains(errOut, "looked in data dir ./data") {
		t.Errorf("not running: exit %d, does not say where it looked:\n%s", code, errOut)
	}
	// A stopped service is forgotten; a killed one's record is skipped.
	p = startServeAt(t, cfg, dataDir, state)
	_ = p.cmd.Process.Kill()
	<-p.done
	_, errOut, code = runIn(t, elsewhere, []string{state}, "status")
	if code != exitNotRunning || !strings.Contains(errOut, dataDir) {
		t.Errorf("after a kill: exit %d, does not name %s:\n%s", code, dataDir, errOut)
	}
}

func TestCLI_StateCommandsAreIdempotent(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	for _, step := range []struct{ sub, want string }{
		{"pause", "news is now paused"},
		{"pause", "news is already paused"},
		{"resume", "news is now active"},
		{"resume", "news is already active"},
	} {
		out, errOut, code := run(t, "tasks", step.sub, "news", "--data-dir", dataDir)
		if code != exitOK || strings.TrimSpace(out) != step.want {
			t.Errorf("tasks %s news: exit %d, %q %q; want %q", step.sub, code, out, errOut, step.want)
		}
	}
	var v taskRow
	cliJSON(t, dataDir, &v, "tasks", "resume", "news")
	if v.State != "active" {
		t.Errorf("resume --json of an active task = %+v", v)
	}
}

func TestCLI_DeletingAConfigTaskPointsToTheConfigFile(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	out, errOut, code := run(t, "tasks", "delete", "news", "--data-dir", dataDir)
	if code != exitFailure || out != "" || !strings.Contains(errOut, "declared in the service's config file") ||
		!strings.Contains(errOut, "herald tasks pause news") {
		t.Errorf("tasks delete of a config task: exit %d\n%s%s", code, out, errOut)
	}
	if got := listTasks(t, dataDir)["news"]; got.State != "active" {
		t.Errorf("the refused delete changed the task: %+v", got)
	}
}

func TestCLI_LedgerShowOfAnUnknownTaskIsAnError(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	out, errOut, code := run(t, "ledger", "show", "t-nope", "--data-dir", dataDir)
	if code != exitFailure || out != "" || !strings.Contains(errOut, "no task, request or inbound hook named t-nope") {
		t.Errorf("ledger show t-nope: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, _ = run(t, "ledger", "show", "t-nope", "--json", "--data-dir", dataDir)
	if got, _ := jsonError(t, errOut); got != "not_found" {
		t.Errorf("--json code %q", got)
	}
	// A known hook with nothing in the ledger yet is an empty list.
	if out := cli(t, dataDir, "ledger", "show", "ci", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("ledger show ci = %q", out)
	}
}

func TestCLI_InboxTokenPrintsThePublicURLWhenSet(t *testing.T) {
	cfg := adjustExample(t, freeAddr(t), map[string]string{`public_url: ""`: `public_url: "https://herald.example.org/"`})
	_, dataDir := startServe(t, cfg)
	out := cli(t, dataDir, "inbox", "token", "console:admin")
	if !strings.Contains(out, "https://herald.example.org/api/v1/inbox") {
		t.Errorf("inbox token does not print the public URL:\n%s", out)
	}
}
