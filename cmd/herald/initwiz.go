package main

// herald init: the first-run wizard. It asks (or, with --non-interactive,
// takes from flags) the chat platforms and their credentials, the admins,
// the timezone, the language and the data dir; writes herald.yaml, whose
// secrets are ${NAME} references, and a mode-0600 secrets file it names
// as secrets_file; then checks the result as check-config does.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/mattn/go-isatty"

	"github.com/herald-bridge/herald/delivery/address"
)

// The secrets init writes, by the names herald.yaml refers to them with.
const (
	secretTelegramToken = "TELEGRAM_BOT_TOKEN"
	secretFeishuAppID   = "FEISHU_APP_ID"
	secretFeishuSecret  = "FEISHU_APP_SECRET"
)

// defaultSecretsFile is the secrets file's name beside the config.
const defaultSecretsFile = "herald.secrets.yaml"

// initAnswers is everything the wizard asks.
type initAnswers struct {
	telegramToken   string
	telegramAPIURL  string
	feishuAppID     string
	feishuAppSecret string
	admins          []string // besides console:admin
	timezone        string
	language        string
	dataDir         string
}

func cmdInit(e *env, args []string) int {
	var a initAnswers
	fs := e.flags
	nonInteractive := fs.Bool("non-interactive", false, "take every answer from flags; never prompt")
	fs.StringVar(&a.telegramToken, "telegram-token", "", "Telegram bot token (or env TELEGRAM_BOT_TOKEN)")
	fs.StringVar(&a.telegramAPIURL, "telegram-api-url", "", "Telegram Bot API base URL (default https://api.telegram.org)")
	fs.StringVar(&a.feishuAppID, "feishu-app-id", "", "Feishu app id (or env FEISHU_APP_ID)")
	fs.StringVar(&a.feishuAppSecret, "feishu-app-secret", "", "Feishu app secret (or env FEISHU_APP_SECRET)")
	fs.Func("admin", "an admin principal, e.g. telegram:123 or feishu:ou_abc (repeat or comma-separate; console:admin always is one)", func(s string) error {
		a.admins = append(a.admins, splitList(s)...)
		return nil
	})
	fs.StringVar(&a.timezone, "timezone", "", "IANA time zone for schedules, e.g. Asia/Shanghai (default UTC)")
	fs.StringVar(&a.language, "language", "", "en or zh: notices and replies (default en)")
	secretsPath := fs.String("secrets", "", "the secrets file to write (default "+defaultSecretsFile+" beside the config)")
	force := fs.Bool("force", false, "replace an existing config and secrets file")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the /start message that finds your Telegram id")
	pos, code, ok := e.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return e.usage("takes no arguments")
	}
	if !e.dataDirFound {
		a.dataDir = e.dataDir
	}
	if *secretsPath == "" {
		*secretsPath = filepath.Join(filepath.Dir(e.config), defaultSecretsFile)
	}
	interactive := !*nonInteractive
	if interactive {
		if f, ok := e.stdin.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
			return e.usage("stdin is not a terminal: answer with flags and --non-interactive")
		}
	}
	if !*force {
		if msg := initExisting(e.config, *secretsPath); msg != "" {
			e.printError("exists", "herald init: "+msg+"; pass --force to replace it")
			return exitFailure
		}
	}

	if interactive {
		w := &initWizard{e: e, out: e.stdout, lines: readLines(e.stdin), wait: *wait}
		if err := w.run(&a); err != nil {
			e.printError("aborted", "herald init: "+err.Error()+"; nothing written")
			return exitFailure
		}
	} else {
		fromEnv(&a.telegramToken, secretTelegramToken)
		fromEnv(&a.feishuAppID, secretFeishuAppID)
		fromEnv(&a.feishuAppSecret, secretFeishuSecret)
	}
	if a.dataDir == "" {
		a.dataDir = defaultDataDir
	}
	if a.timezone == "" {
		a.timezone = "UTC"
	}
	if a.language == "" {
		a.language = "en"
	}
	if err := a.check(); err != nil {
		return e.usage(err.Error())
	}
	if err := writeInit(e.config, *secretsPath, a); err != nil {
		e.printError("write", "herald init: "+err.Error())
		return exitFailure
	}
	info := e.stdout
	if e.json {
		info = e.stderr // stdout carries check-config's JSON alone
	}
	fmt.Fprintf(info, "Wrote %s and %s (the secrets, mode 0600); the data dir is %s.\n", e.config, *secretsPath, a.dataDir)
	// The same check as `herald check-config`, by the same function.
	checkArgs := []string{"--config", e.config}
	if e.json {
		checkArgs = append(checkArgs, "--json")
	}
	check := commandNamed("check-config")
	if code := check.run(newEnv(check, e.stdin, e.stdout, e.stderr), checkArgs); code != exitOK {
		return code
	}
	fmt.Fprintf(info, "Start herald with:\n  herald serve --config %s --data-dir %s\n", absPath(e.config), absPath(a.dataDir))
	return exitOK
}

// commandNamed is the command called name.
func commandNamed(name string) command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	panic("no command " + name)
}

// initExisting says why init may not write config and secrets without
// --force: the config exists, or the secrets file holds anything.
func initExisting(config, secrets string) string {
	if _, err := os.Lstat(config); err == nil {
		return config + " exists"
	}
	if raw, err := os.ReadFile(secrets); err == nil && strings.TrimSpace(string(raw)) != "" {
		return secrets + " exists and is not empty"
	}
	return ""
}

func fromEnv(v *string, name string) {
	if *v == "" {
		*v = os.Getenv(name)
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// check validates the answers; its messages never hold a secret.
func (a *initAnswers) check() error {
	if _, err := time.LoadLocation(a.timezone); err != nil || a.timezone == "Local" {
		return fmt.Errorf("--timezone: unknown time zone %q (want an IANA name such as Asia/Shanghai)", a.timezone)
	}
	if a.language != "en" && a.language != "zh" {
		return fmt.Errorf("--language: want en or zh, not %q", a.language)
	}
	for _, p := range a.admins {
		if err := checkAdmin(p); err != nil {
			return fmt.Errorf("--admin: %v", err)
		}
	}
	if (a.feishuAppID == "") != (a.feishuAppSecret == "") {
		return errors.New("--feishu-app-id and --feishu-app-secret go together")
	}
	for _, s := range []struct{ flag, v string }{{"--telegram-token", a.telegramToken}, {"--feishu-app-id", a.feishuAppID}, {"--feishu-app-secret", a.feishuAppSecret}} {
		if strings.ContainsFunc(s.v, func(r rune) bool { return r < ' ' || r == ' ' || r == 0x7f }) {
			return fmt.Errorf("%s: holds spaces or control characters", s.flag)
		}
	}
	if strings.ContainsAny(a.dataDir, "\n\r") {
		return errors.New("--data-dir: holds a line break")
	}
	return nil
}

func checkAdmin(p string) error {
	if !address.ValidPattern(p, false) {
		return fmt.Errorf("malformed principal %q (want %s)", p, address.Forms())
	}
	if address.IsAgent(p) {
		return fmt.Errorf("%q: an agent cannot be an admin", p)
	}
	return nil
}

// adminList is console:admin followed by the other admins, once each.
func (a *initAnswers) adminList() []string {
	out := []string{"console:admin"}
	for _, p := range a.admins {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// renderConfig is herald.yaml for a; secretsRef is how it names the
// secrets file. It holds no secret value: every credential is a ${NAME}.
func renderConfig(a initAnswers, secretsRef, configPath string) string {
	q := strconv.Quote
	list := func(xs []string) string {
		qs := make([]string, len(xs))
		for i, x := range xs {
			qs[i] = q(x)
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# herald configuration, written by herald init.
# Every key and its default: docs/configuration.md and herald.example.yaml.
# Credentials are ${NAME} references to secrets_file (mode 0600).
# Run the service with:
#   herald serve --config %s --data-dir %s

secrets_file: %s

server:
  listen: 127.0.0.1:8080

timezone: %s
language: %s

channels:
`, absPath(configPath), absPath(a.dataDir), q(secretsRef), q(a.timezone), q(a.language))
	requesters := []string{"console:*"}
	if a.telegramToken != "" {
		b.WriteString("  telegram:\n    enabled: true\n    token: \"${" + secretTelegramToken + "}\"\n    mode: polling\n")
		if a.telegramAPIURL != "" {
			b.WriteString("    api_url: " + q(a.telegramAPIURL) + "\n")
		}
		requesters = append(requesters, "telegram:*")
	} else {
		b.WriteString("  telegram:\n    enabled: false\n")
	}
	if a.feishuAppID != "" {
		b.WriteString("  feishu:\n    enabled: true\n    app_id: \"${" + secretFeishuAppID + "}\"\n    app_secret: \"${" + secretFeishuSecret + "}\"\n    mode: websocket\n")
		requesters = append(requesters, "feishu:*")
	} else {
		b.WriteString("  feishu:\n    enabled: false\n")
	}
	admins := a.adminList()
	fmt.Fprintf(&b, `
policy:
  admins: %s
  requesters: %s   # anyone in these may ask; an admin approves
  auto_approve:
    - {principals: %s, hosts: ["*"]}
`, list(admins), list(requesters), list(admins))
	return b.String()
}

// writeInit writes the secrets file (mode 0600, keeping names it already
// holds that init does not set) and then the config.
func writeInit(configPath, secretsPath string, a initAnswers) error {
	secrets := map[string]string{}
	if raw, err := os.ReadFile(secretsPath); err == nil && strings.TrimSpace(string(raw)) != "" {
		if err := yaml.Unmarshal(raw, &secrets); err != nil {
			return fmt.Errorf("%s: not a map of NAME: value; move it away or fix it", secretsPath)
		}
	}
	set := func(name, v string) {
		if v != "" {
			secrets[name] = v
		}
	}
	set(secretTelegramToken, a.telegramToken)
	set(secretFeishuAppID, a.feishuAppID)
	set(secretFeishuSecret, a.feishuAppSecret)
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("# herald secrets: NAME: value, referenced from herald.yaml as ${NAME}. Keep it mode 0600.\n")
	for _, k := range names {
		sb.WriteString(k + ": " + strconv.Quote(secrets[k]) + "\n")
	}

	secretsRef := secretsPath
	if filepath.Dir(absPath(secretsPath)) == filepath.Dir(absPath(configPath)) {
		secretsRef = filepath.Base(secretsPath)
	} else {
		secretsRef = absPath(secretsPath)
	}
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %v", unwrapPath(err))
	}
	if err := writeInitFile(secretsPath, []byte(sb.String()), 0o600); err != nil {
		return fmt.Errorf("%s: %v", secretsPath, err)
	}
	if err := writeInitFile(configPath, []byte(renderConfig(a, secretsRef, configPath)), 0o644); err != nil {
		return fmt.Errorf("%s: %v", configPath, err)
	}
	return nil
}

// writeInitFile replaces path with data (temp file, fsync, rename),
// keeping the owner of a file it replaces when it may.
func writeInitFile(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return unwrapPath(err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return unwrapPath(err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return unwrapPath(err)
	}
	if fi, err := os.Stat(path); err == nil {
		keepOwner(f, fi) // as root: the service user keeps reading it
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return unwrapPath(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return unwrapPath(err)
	}
	if err := f.Close(); err != nil {
		return unwrapPath(err)
	}
	return unwrapPath(os.Rename(tmp, path))
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// readLines reads stdin line by line into a channel, closed at its end.
// Prompts and the wait for /start (where Enter stops it) share it. The
// goroutine ends with stdin, at the latest when the command exits.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- strings.TrimSpace(sc.Text())
		}
	}()
	return ch
}

// errNoInput: stdin ended before an answer.
var errNoInput = errors.New("input ended")

// initWizard asks the questions on a terminal.
type initWizard struct {
	e     *env
	out   io.Writer
	lines <-chan string
	wait  time.Duration
}

// ask prints question with its default and returns the answer, or def
// for an empty one.
func (w *initWizard) ask(question, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(w.out, "%s [%s]: ", question, def)
	} else {
		fmt.Fprintf(w.out, "%s: ", question)
	}
	line, ok := <-w.lines
	if !ok {
		fmt.Fprintln(w.out)
		return "", errNoInput
	}
	if line == "" {
		return def, nil
	}
	return line, nil
}

// askValid asks until valid accepts the answer.
func (w *initWizard) askValid(question, def string, valid func(string) error) (string, error) {
	for {
		ans, err := w.ask(question, def)
		if err != nil {
			return "", err
		}
		if err := valid(ans); err != nil {
			fmt.Fprintf(w.out, "  %v\n", err)
			continue
		}
		return ans, nil
	}
}

func (w *initWizard) yes(question string, def bool) (bool, error) {
	hint := "y/N"
	if def {
		hint = "Y/n"
	}
	for {
		fmt.Fprintf(w.out, "%s [%s]: ", question, hint)
		line, ok := <-w.lines
		if !ok {
			fmt.Fprintln(w.out)
			return false, errNoInput
		}
		switch strings.ToLower(line) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		fmt.Fprintln(w.out, "  answer y or n")
	}
}

func nonEmpty(s string) error {
	if s == "" {
		return errors.New("needed; try again")
	}
	if strings.ContainsAny(s, " \t") {
		return errors.New("no spaces, please; try again")
	}
	return nil
}

// run asks every question, starting from what flags already answered.
func (w *initWizard) run(a *initAnswers) error {
	fmt.Fprintln(w.out, "herald init: a few questions, then herald.yaml and its secrets file are written.")
	fmt.Fprintln(w.out, "Press Enter to take the [default].")
	var err error
	useTelegram := a.telegramToken != ""
	if !useTelegram {
		if useTelegram, err = w.yes("Chat with herald in Telegram?", true); err != nil {
			return err
		}
	}
	if useTelegram {
		if a.telegramToken == "" {
			if a.telegramToken, err = w.askValid("Telegram bot token (from @BotFather)", "", nonEmpty); err != nil {
				return err
			}
		}
		if err := w.findTelegramAdmin(a); err != nil {
			return err
		}
	}
	useFeishu := a.feishuAppID != ""
	if !useFeishu {
		if useFeishu, err = w.yes("Chat with herald in Feishu (Lark)?", false); err != nil {
			return err
		}
	}
	if useFeishu {
		if a.feishuAppID, err = w.askValid("Feishu app id", a.feishuAppID, nonEmpty); err != nil {
			return err
		}
		if a.feishuAppSecret == "" {
			if a.feishuAppSecret, err = w.askValid("Feishu app secret", "", nonEmpty); err != nil {
				return err
			}
		}
		fmt.Fprintln(w.out, "  Your Feishu admin id is your open_id (ou_...), as feishu:ou_...; add it below.")
	}
	admins, err := w.askValid("Admins besides console:admin, comma-separated (telegram:<user_id>, feishu:<open_id>)",
		strings.Join(a.admins, ","), func(s string) error {
			for _, p := range splitList(s) {
				if err := checkAdmin(p); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	a.admins = splitList(admins)
	if a.timezone, err = w.askValid("Time zone for schedules (IANA name, e.g. Asia/Shanghai)", orDefault(a.timezone, localZone()), func(s string) error {
		if _, err := time.LoadLocation(s); err != nil || s == "Local" {
			return errors.New("unknown time zone; try again")
		}
		return nil
	}); err != nil {
		return err
	}
	if a.language, err = w.askValid("Language of notices and replies, en or zh", orDefault(a.language, "en"), func(s string) error {
		if s != "en" && s != "zh" {
			return errors.New("en or zh; try again")
		}
		return nil
	}); err != nil {
		return err
	}
	if a.dataDir, err = w.askValid("Data dir (the store, downloads)", orDefault(a.dataDir, defaultDataDir), func(s string) error {
		if strings.ContainsAny(s, "\n\r") {
			return errors.New("one line, please")
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// findTelegramAdmin checks the token and, if the person wants, finds
// their user id from the next message they send the bot.
func (w *initWizard) findTelegramAdmin(a *initAnswers) error {
	bot := newInitBot(a.telegramAPIURL, a.telegramToken)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	me, err := bot.me(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(w.out, "  Could not reach the bot: %v. The token is kept; check-config will not catch this.\n", err)
		return nil
	}
	fmt.Fprintf(w.out, "  The bot is @%s.\n", me.Username)
	find, err := w.yes("Find your Telegram user id now (you send the bot a message)?", true)
	if err != nil || !find {
		return err
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	user, err := bot.waitForStart(sigCtx, w.wait, w.lines, func() {
		fmt.Fprintf(w.out, "  Send /start to @%s in Telegram now. Waiting up to %s (Enter: type the id instead; Ctrl-C: skip)...\n", me.Username, w.wait)
	})
	stop()
	switch {
	case err == nil:
		p := "telegram:" + strconv.FormatInt(user.ID, 10)
		fmt.Fprintf(w.out, "  Found %s, id %d: %s is an admin.\n", user.describe(), user.ID, p)
		if !slices.Contains(a.admins, p) {
			a.admins = append(a.admins, p)
		}
		return nil
	case errors.Is(err, errStartSkipped):
		fmt.Fprintln(w.out)
	default:
		fmt.Fprintf(w.out, "  %v.\n", err)
	}
	id, err := w.askValid("Your Telegram user id (a number; Enter to skip)", "", func(s string) error {
		if s == "" {
			return nil
		}
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return errors.New("a number, please; try again")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if id != "" && !slices.Contains(a.admins, "telegram:"+id) {
		a.admins = append(a.admins, "telegram:"+id)
	}
	return nil
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// localZone is $TZ when it names a zone, else UTC.
func localZone() string {
	if tz := os.Getenv("TZ"); tz != "" && tz != "Local" {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	return "UTC"
}
