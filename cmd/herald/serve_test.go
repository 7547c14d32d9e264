package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// minimalConfig is the reference config with only the listen address and
// private networks changed.
func minimalConfig(t *testing.T) string {
	t.Helper()
	return adjustExample(t, freeAddr(t), nil)
}

func TestServe_CleanStartIsHealthyAndReady_SignalExitsZeroAndRemovesAdminRecord(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, dataDir := startServe(t, minimalConfig(t))
			if fi, err := os.Stat(filepath.Join(dataDir, "admin.json")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("admin.json must be private (0600): %v %v", fi.Mode(), err)
			}
			for _, path := range []string{"/healthz", "/readyz"} {
				eventually(t, path+" answers 200", func() bool {
					resp, err := http.Get(p.url(path))
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				})
			}
			if code := p.signal(sig); code != 0 {
				t.Fatalf("exit code after %v = %d, want 0\nlog:\n%s", sig, code, p.log.String())
			}
			if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); !os.IsNotExist(err) {
				t.Fatalf("admin.json after a clean exit: %v", err)
			}
			if !strings.Contains(p.log.String(), "shutting down") {
				t.Errorf("the log does not say it is shutting down:\n%s", p.log.String())
			}
		})
	}
}

func TestServe_SecondServeOnSameDataDirIsRefused(t *testing.T) {
	p, dataDir := startServe(t, minimalConfig(t))
	// Same data dir, another port: the data-dir lock, not the port, refuses it.
	other := writeConfig(t, minimalConfig(t))
	out, errOut, code := run(t, "serve", "--config", other, "--data-dir", dataDir)
	if code != 1 {
		t.Fatalf("second serve exit = %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "another herald serves this data dir") || !strings.Contains(errOut, "pid") {
		t.Errorf("second serve does not say why clearly:\n%s", errOut)
	}
	if ok, _ := p.exited(); ok {
		t.Fatal("the first serve died")
	}
	if _, _, code := run(t, "status", "--data-dir", dataDir); code != 0 {
		t.Fatalf("the first serve no longer answers the CLI (exit %d)", code)
	}
}

func TestServe_StaleAdminRecordAfterSIGKILLDoesNotBlockNextStart(t *testing.T) {
	cfg := writeConfig(t, minimalConfig(t))
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, cfg, dataDir)
	// The start helper returns once the admin API answers, which may be
	// before the scheduler has taken its lease; the case under test is a
	// dead process that holds it, so kill only once it does.
	eventually(t, "the first serve owns scheduling", func() bool {
		var st statusView
		cliJSON(t, dataDir, &st, "status")
		return st.Owner
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); err != nil {
		t.Fatalf("a SIGKILLed serve should leave admin.json behind: %v", err)
	}
	// The CLI follows the stale record to a dead address: not running.
	if _, errOut, code := run(t, "tasks", "list", "--data-dir", dataDir); code != exitNotRunning {
		t.Fatalf("tasks list on a stale record: exit %d, want %d\n%s", code, exitNotRunning, errOut)
	}
	p2 := startServeAt(t, cfg, dataDir)
	// The killed process still held the scheduling lease (15 s). The data-
	// dir lock proves it dead, so the new one takes over at once instead of
	// leaving schedules and the recovery of interrupted pushes waiting.
	var st statusView
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cliJSON(t, dataDir, &st, "status")
		if st.Owner {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted serve does not own scheduling 5 s after start (the dead holder's lease lasts 15 s)\nlog:\n%s", p2.log.String())
		}
	}
	if st.Epoch < 2 || !strings.Contains(p2.log.String(), "took over a lease") {
		t.Fatalf("epoch %d after takeover; log:\n%s", st.Epoch, p2.log.String())
	}
	if code := p2.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestServe_SIGHUPWithInvalidConfigKeepsTheOldOne(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	valid, _ := os.ReadFile(p.cfgPath)
	broken := strings.Replace(string(valid), "language: en", "language: en\nlanguag: zh", 1)
	if err := os.WriteFile(p.cfgPath, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the log reports the rejected reload", func() bool {
		return strings.Contains(p.log.String(), "keeping the previous one")
	})
	if !strings.Contains(p.log.String(), `unknown key \"languag\"`) {
		t.Errorf("the log does not name the problem:\n%s", p.log.String())
	}
	if ok, _ := p.exited(); ok {
		t.Fatal("serve exited on an invalid reload")
	}
	resp, err := http.Get(p.url("/healthz"))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after a rejected reload: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := listTasks(t, dataDir); got["news"].State != "active" || len(got) != 1 {
		t.Fatalf("tasks after a rejected reload: %+v", got)
	}
}

func TestServe_SIGHUPWithValidConfigAddsDeclaredTask(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	if _, ok := listTasks(t, dataDir)["digest"]; ok {
		t.Fatal("digest exists before the reload")
	}
	edited := fx.config(t, "  - id: digest\n    name: Daily digest\n    source: {kind: rss, url: \""+fx.feed.url()+"\"}\n    schedule: daily 08:00 Asia/Shanghai\n    notify: [\"inbox:console:admin\"]\n")
	if err := os.WriteFile(p.cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "digest appears in tasks list", func() bool {
		_, ok := listTasks(t, dataDir)["digest"]
		return ok
	})
	d := listTasks(t, dataDir)["digest"]
	if d.Name != "Daily digest" || d.State != "active" || !strings.HasPrefix(d.Schedule, "daily 08:00") {
		t.Errorf("digest after reload = %+v", d)
	}
	if !strings.Contains(p.log.String(), "configuration reloaded") {
		t.Errorf("the log does not report the reload:\n%s", p.log.String())
	}
	if strings.Contains(p.log.String(), "takes effect at the next start") {
		t.Errorf("a reload that changed only tasks warned about a restart:\n%s", p.log.String())
	}
}

// A reload that changes what only a start applies (the listener, the
// store, a chat channel's conversation side) says so, by key and without
// values, instead of ignoring it silently.
func TestServe_SIGHUPNamesSettingsThatNeedARestart(t *testing.T) {
	fx := newFixture(t)
	p, _ := fx.start(t)
	cfg, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`(?m)^  public_url: .*$`).ReplaceAllString(string(cfg), `  public_url: "https://herald.example.org"`)
	if edited == string(cfg) {
		t.Fatalf("the fixture config has no server.public_url:\n%s", cfg)
	}
	if err := os.WriteFile(p.cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restart warning", func() bool {
		return strings.Contains(p.log.String(), `"setting":"server"`) &&
			strings.Contains(p.log.String(), "takes effect at the next start")
	})
	if strings.Contains(p.log.String(), "herald.example.org") {
		t.Errorf("the warning quotes the value:\n%s", p.log.String())
	}
}

func TestServe_SIGINTDuringAHeldRunExitsZeroWithinBound(t *testing.T) {
	fx := newFixture(t)
	p, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	hit := fx.feed.close()
	type result struct {
		stderr string
		code   int
	}
	waiting := make(chan result, 1)
	go func() {
		_, errOut, code := run(t, "tasks", "run", "news", "--data-dir", dataDir)
		waiting <- result{errOut, code}
	}()
	<-hit // a CLI-driven check is held inside the source fetch
	if code := p.signal(syscall.SIGINT); code != 0 {
		t.Fatalf("exit %d, want 0\nlog:\n%s", code, p.log.String())
	}
	if r := <-waiting; r.code != exitFailure || !strings.Contains(r.stderr, "shutting down; the check was cancelled") {
		t.Errorf("the interrupted tasks run: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); !os.IsNotExist(err) {
		t.Errorf("admin.json after a clean exit: %v", err)
	}
}

func TestServe_InvalidConfigExitsOneNamingFileLine(t *testing.T) {
	cfg := strings.Replace(minimalConfig(t), "language: en", "language: en\nlangauge: zh", 1)
	path := writeConfig(t, cfg)
	dataDir := filepath.Join(t.TempDir(), "data")
	_, errOut, code := run(t, "serve", "--config", path, "--data-dir", dataDir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	if !strings.Contains(errOut, path+":") || !strings.Contains(errOut, `unknown key "langauge"`) {
		t.Errorf("stderr does not name the problem:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); !os.IsNotExist(err) {
		t.Errorf("a refused start left admin.json: %v", err)
	}
}

func TestServe_ListenAddressInUseExitsOneAndLeavesNoAdminRecord(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	path := writeConfig(t, adjustExample(t, l.Addr().String(), nil))
	dataDir := filepath.Join(t.TempDir(), "data")
	_, errOut, code := run(t, "serve", "--config", path, "--data-dir", dataDir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	if !strings.Contains(errOut, l.Addr().String()) {
		t.Errorf("stderr does not name the address:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "admin.json")); !os.IsNotExist(err) {
		t.Errorf("a failed start left admin.json: %v", err)
	}
	// The lock went with the process: the next start on a free port works.
	startServeAt(t, writeConfig(t, minimalConfig(t)), dataDir)
}

func TestI3_SendTestInterruptedByShutdownEndsUnknownNotReplayed(t *testing.T) {
	fx := newFixture(t)
	cfg := writeConfig(t, fx.config(t, ""))
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServeAt(t, cfg, dataDir, hookSecretEnv+"="+hookSecret)
	hit := fx.rcv.holdAll()
	type result struct {
		stderr string
		code   int
	}
	waiting := make(chan result, 1)
	go func() {
		_, errOut, code := run(t, "send-test", "ops", "--data-dir", dataDir)
		waiting <- result{errOut, code}
	}()
	<-hit // the push crossed into the recipient and hangs there
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d, want 0\nlog:\n%s", code, p.log.String())
	}
	if r := <-waiting; r.code != exitFailure || !strings.Contains(r.stderr, "shutting down; the test push was claimed") {
		t.Errorf("the interrupted send-test: exit %d, stderr %q", r.code, r.stderr)
	}
	startServeAt(t, cfg, dataDir, hookSecretEnv+"="+hookSecret)
	var fxs []effectRow
	eventually(t, "the interrupted push is settled", func() bool {
		cliJSON(t, dataDir, &fxs, "ledger", "show", "test")
		return len(fxs) == 1 && fxs[0].State != "pending"
	})
	if fxs[0].State != "unknown" {
		t.Errorf("interrupted push = %+v, want unknown", fxs[0])
	}
	if n := len(fx.rcv.deliveries()); n != 1 {
		t.Errorf("the recipient saw %d requests; an unknown push is never replayed", n)
	}
}
