package main

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/herald-bridge/herald/configs"
)

const (
	initTGToken      = "123456:AAtelegram_Secret-Token"
	initFeishuID     = "cli_a1b2c3d4e5"
	initFeishuSecret = "feishuAppSecretValue42"
)

// assertSecretsOnlyInFile checks that the secrets file is mode 0600 and
// holds every secret, and that the config holds none of them.
func assertSecretsOnlyInFile(t *testing.T, cfgPath, secretsPath string, secrets ...string) {
	t.Helper()
	fi, err := os.Stat(secretsPath)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("secrets file mode %o, want 600", m)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := os.ReadFile(secretsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(cfg), s) {
			t.Errorf("%s holds a secret:\n%s", cfgPath, cfg)
		}
		if !strings.Contains(string(sec), s) {
			t.Errorf("secrets file lacks one of the secrets")
		}
	}
}

func TestInitNonInteractiveWritesAConfigCheckConfigAccepts(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "etc", "herald.yaml")
	dataDir := filepath.Join(dir, "data")
	out, errOut, code := run(t, "init", "--non-interactive", "--config", cfgPath, "--data-dir", dataDir,
		"--telegram-token", initTGToken, "--feishu-app-id", initFeishuID, "--feishu-app-secret", initFeishuSecret,
		"--admin", "telegram:4242", "--admin", "feishu:ou_abc,telegram:77", "--timezone", "Asia/Shanghai", "--language", "zh")
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "ok — ") || !strings.Contains(out, "herald serve --config "+cfgPath+" --data-dir "+dataDir) {
		t.Errorf("init output lacks the check result or the serve line:\n%s", out)
	}
	secretsPath := filepath.Join(dir, "etc", defaultSecretsFile)
	assertSecretsOnlyInFile(t, cfgPath, secretsPath, initTGToken, initFeishuID, initFeishuSecret)
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v %v", fi, err)
	}

	// The real check-config accepts it, without a word of warning.
	out, errOut, code = run(t, "check-config", "--config", cfgPath, "--json")
	if code != exitOK {
		t.Fatalf("check-config: exit %d\n%s%s", code, out, errOut)
	}
	var checked struct {
		OK       bool     `json:"ok"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &checked); err != nil || !checked.OK || len(checked.Warnings) != 0 {
		t.Errorf("check-config --json: %v %s", err, out)
	}

	// And the secrets reach the channels through ${NAME}.
	cfg, err := configs.LoadEnv(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, fe := cfg.Channels.Telegram, cfg.Channels.Feishu
	if !tg.Enabled || tg.Token != initTGToken || !fe.Enabled || fe.AppID != initFeishuID || fe.AppSecret != initFeishuSecret {
		t.Errorf("channels not enabled with the secrets: telegram %v, feishu %v", tg.Enabled, fe.Enabled)
	}
	if cfg.Timezone != "Asia/Shanghai" || cfg.Language != "zh" {
		t.Errorf("timezone %q language %q", cfg.Timezone, cfg.Language)
	}
	if got := strings.Join(cfg.Policy.Admins, ","); got != "console:admin,telegram:4242,feishu:ou_abc,telegram:77" {
		t.Errorf("admins %s", got)
	}
}

func TestInitNonInteractiveTakesTokensFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "herald.yaml")
	out, errOut, code := runEnv(t, []string{"TELEGRAM_BOT_TOKEN=" + initTGToken}, "init", "--non-interactive",
		"--config", cfgPath, "--data-dir", filepath.Join(dir, "data"))
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	assertSecretsOnlyInFile(t, cfgPath, filepath.Join(dir, defaultSecretsFile), initTGToken)
	if strings.Contains(out+errOut, initTGToken) {
		t.Errorf("the token was printed")
	}
}

func TestInitRefusesToOverwriteWithoutForce(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "herald.yaml")
	secretsPath := filepath.Join(dir, "secrets.yaml")
	const old = "# mine\n"
	if err := os.WriteFile(cfgPath, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretsPath, []byte("SMTP_PASSWORD: keep-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"init", "--non-interactive", "--config", cfgPath, "--secrets", secretsPath,
		"--data-dir", filepath.Join(dir, "data"), "--telegram-token", initTGToken}
	_, errOut, code := run(t, args...)
	if code != exitFailure || !strings.Contains(errOut, "--force") {
		t.Fatalf("init over an existing config: exit %d, %s", code, errOut)
	}
	if raw, _ := os.ReadFile(cfgPath); string(raw) != old {
		t.Fatalf("config changed without --force:\n%s", raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("data dir made by a refused init: %v", err)
	}

	// A secrets file with something in it counts as an existing config.
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, args...); code != exitFailure || !strings.Contains(errOut, "--force") {
		t.Fatalf("init over a non-empty secrets file: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(cfgPath); !os.IsNotExist(err) {
		t.Fatalf("config written by a refused init: %v", err)
	}

	// --force replaces the config and keeps the secrets it does not set.
	if out, errOut, code := run(t, append(args, "--force")...); code != exitOK {
		t.Fatalf("init --force: exit %d\n%s%s", code, out, errOut)
	}
	assertSecretsOnlyInFile(t, cfgPath, secretsPath, initTGToken, "keep-me")
	if _, _, code := run(t, "check-config", "--config", cfgPath); code != exitOK {
		t.Errorf("check-config after init --force: exit %d", code)
	}
}

func TestInitRejectsBadAnswersAndNeedsATerminal(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "herald.yaml")
	for _, bad := range [][]string{
		{"--admin", "agent:bot"},
		{"--admin", "telegram"},
		{"--timezone", "Mars/Olympus"},
		{"--language", "fr"},
		{"--feishu-app-id", initFeishuID},
	} {
		args := append([]string{"init", "--non-interactive", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data")}, bad...)
		if _, errOut, code := run(t, args...); code != exitUsage {
			t.Errorf("init %v: exit %d, want %d: %s", bad, code, exitUsage, errOut)
		}
	}
	// Without --non-interactive, stdin must be a terminal.
	if _, errOut, code := run(t, "init", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data")); code != exitUsage || !strings.Contains(errOut, "--non-interactive") {
		t.Errorf("init without a terminal: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(cfgPath); !os.IsNotExist(err) {
		t.Errorf("config written by a refused init: %v", err)
	}
}

// fakeBotAPI is a Telegram Bot API on httptest (TLS) that knows one bot
// token and queues updates for getUpdates, long polling included.
type fakeBotAPI struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	updates []map[string]any
	offsets []int64
}

func newFakeBotAPI(t *testing.T, token string) *fakeBotAPI {
	f := &fakeBotAPI{token: token}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBotAPI) push(id, from int64, first, username, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, map[string]any{"update_id": id, "message": map[string]any{
		"message_id": id, "text": text, "chat": map[string]any{"id": from, "type": "private"},
		"from": map[string]any{"id": from, "is_bot": false, "first_name": first, "username": username}}})
}

func (f *fakeBotAPI) offsetsSeen() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.offsets...)
}

func (f *fakeBotAPI) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(code int, v any) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/bot" + f.token + "/getMe":
		reply(200, map[string]any{"ok": true, "result": map[string]any{"id": 1, "is_bot": true, "first_name": "Herald", "username": "herald_test_bot"}})
	case "/bot" + f.token + "/getUpdates":
		offset, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
		timeout, _ := strconv.Atoi(r.URL.Query().Get("timeout"))
		f.mu.Lock()
		f.offsets = append(f.offsets, offset)
		f.mu.Unlock()
		deadline := time.Now().Add(time.Duration(timeout) * time.Second)
		for {
			f.mu.Lock()
			var out []map[string]any
			switch {
			case offset < 0 && len(f.updates) > 0:
				f.updates = f.updates[len(f.updates)-1:] // the rest are forgotten
				out = f.updates
			case offset > 0:
				var keep []map[string]any
				for _, u := range f.updates {
					if u["update_id"].(int64) >= offset {
						keep = append(keep, u)
					}
				}
				f.updates, out = keep, keep
			default:
				out = f.updates
			}
			f.mu.Unlock()
			if len(out) > 0 || offset < 0 || !time.Now().Before(deadline) || r.Context().Err() != nil {
				reply(200, map[string]any{"ok": true, "result": append([]map[string]any{}, out...)})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	default:
		reply(401, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
	}
}

// certFile writes the fake's certificate where SSL_CERT_FILE can name it.
func (f *fakeBotAPI) certFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "ca.pem")
	der := f.srv.Certificate().Raw
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// terminal drives a command on a pseudo-terminal: it reads everything the
// command prints and answers prompts.
type terminal struct {
	t    *testing.T
	ptmx *os.File
	mu   sync.Mutex
	buf  strings.Builder
	seen int // expect has matched up to here
}

func startOnTerminal(t *testing.T, cmd *exec.Cmd) *terminal {
	t.Helper()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, ptmx: ptmx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			term.mu.Lock()
			term.buf.Write(b[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		ptmx.Close()
		<-done
	})
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.buf.String()
}

// expect waits for s to be printed after what was matched before.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.Now().Add(startBound)
	for {
		out := term.output()
		if i := strings.Index(out[term.seen:], s); i >= 0 {
			term.seen += i + len(s)
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("no %q on the terminal; it shows:\n%s", s, out)
		}
		time.Sleep(pollEvery)
	}
}

// send types line and Enter.
func (term *terminal) send(line string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(line + "\r")); err != nil {
		term.t.Fatal(err)
	}
}

// runInitOnTerminal answers the wizard's questions on a pseudo-terminal,
// with the Telegram steps against a fake Bot API; atWait answers the wait
// for /start. It returns the config path.
func runInitOnTerminal(t *testing.T, bot *fakeBotAPI, atWait func(term *terminal), wantAdmins string) string {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "herald.yaml")
	dataDir := filepath.Join(dir, "state")
	cmd := exec.Command(heraldBin, "init", "--config", cfgPath, "--telegram-api-url", bot.srv.URL, "--wait", "30s")
	cmd.Dir = dir
	cmd.Env = childEnv("SSL_CERT_FILE="+bot.certFile(t), "TZ=")
	term := startOnTerminal(t, cmd)

	term.expect("Chat with herald in Telegram? [Y/n]: ")
	term.send("")
	term.expect("Telegram bot token (from @BotFather): ")
	term.send(initTGToken)
	term.expect("The bot is @herald_test_bot.")
	term.expect("Find your Telegram user id now (you send the bot a message)? [Y/n]: ")
	term.send("")
	term.expect("Send /start to @herald_test_bot in Telegram now.")
	atWait(term)
	term.expect("Chat with herald in Feishu (Lark)? [y/N]: ")
	term.send("")
	term.expect("Admins besides console:admin, comma-separated (telegram:<user_id>, feishu:<open_id>) [" + wantAdmins + "]: ")
	term.send("")
	term.expect("Time zone for schedules (IANA name, e.g. Asia/Shanghai) [UTC]: ")
	term.send("Europe/Nowhere")
	term.expect("unknown time zone; try again")
	term.send("Asia/Shanghai")
	term.expect("Language of notices and replies, en or zh [en]: ")
	term.send("zh")
	term.expect("Data dir (the store, downloads) [./data]: ")
	term.send(dataDir)
	term.expect(cfgPath + ": ok — 0 recipients")
	term.expect("herald serve --config " + cfgPath + " --data-dir " + dataDir)

	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("init on a terminal: %v\n%s", err, term.output())
		}
	case <-time.After(exitBound):
		t.Fatalf("init did not exit:\n%s", term.output())
	}

	assertSecretsOnlyInFile(t, cfgPath, filepath.Join(dir, defaultSecretsFile), initTGToken)
	if _, err := os.Stat(dataDir); err != nil {
		t.Errorf("data dir: %v", err)
	}
	out, errOut, code := run(t, "check-config", "--config", cfgPath)
	if code != exitOK {
		t.Fatalf("check-config: exit %d\n%s%s", code, out, errOut)
	}
	cfg, err := configs.LoadEnv(cfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Policy.Admins, ","); got != "console:admin,"+wantAdmins {
		t.Errorf("admins %s, want console:admin,%s", got, wantAdmins)
	}
	if cfg.Timezone != "Asia/Shanghai" || cfg.Language != "zh" || cfg.Channels.Telegram.Token != initTGToken ||
		cfg.Channels.Telegram.APIURL != bot.srv.URL || cfg.Channels.Feishu.Enabled {
		t.Errorf("config: timezone %q, language %q, api_url %q, feishu %v", cfg.Timezone, cfg.Language, cfg.Channels.Telegram.APIURL, cfg.Channels.Feishu.Enabled)
	}
	return cfgPath
}

func TestInitInteractiveFindsTheAdminFromStart(t *testing.T) {
	bot := newFakeBotAPI(t, initTGToken)
	bot.push(5, 999, "Earlier", "earlier", "sent before init asked") // queued: not the admin
	runInitOnTerminal(t, bot, func(term *terminal) {
		bot.push(6, 4242, "Alice", "alice", "/start")
		term.expect("Found Alice (@alice), id 4242: telegram:4242 is an admin.")
	}, "telegram:4242")
	// The /start was confirmed, so the service will not answer it.
	if offs := bot.offsetsSeen(); len(offs) == 0 || offs[0] != -1 || offs[len(offs)-1] != 7 {
		t.Errorf("getUpdates offsets %v: want -1 first and 7 last", offs)
	}
}

func TestInitInteractiveWaitForStartIsCancellable(t *testing.T) {
	bot := newFakeBotAPI(t, initTGToken)
	runInitOnTerminal(t, bot, func(term *terminal) {
		if _, err := term.ptmx.Write([]byte{3}); err != nil { // Ctrl-C
			t.Fatal(err)
		}
		term.expect("Your Telegram user id (a number; Enter to skip): ")
		term.send("abc")
		term.expect("a number, please; try again")
		term.send("555")
	}, "telegram:555")
}

func TestI10_InitBotErrorsHoldNoToken(t *testing.T) {
	bot := newFakeBotAPI(t, "another:token")
	client := newInitBot(bot.srv.URL, initTGToken)
	client.client = bot.srv.Client()
	_, err := client.me(t.Context())
	if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), initTGToken) {
		t.Errorf("a refused token: %v", err)
	}
	addr := bot.srv.Listener.Addr().String()
	bot.srv.Close()
	_, err = newInitBot("https://"+addr, initTGToken).me(t.Context())
	if err == nil || strings.Contains(err.Error(), initTGToken) || strings.Contains(err.Error(), "/bot") {
		t.Errorf("an unreachable API: %v", err)
	}
}
