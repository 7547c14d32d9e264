package configs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// env returns a lookup over the given NAME, value pairs only.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var noEnv = env()

// assertNoSecret fails when any secret appears in err's text or in the
// config's warnings (I10).
func assertNoSecret(t *testing.T, cfg *Config, err error, secrets ...string) {
	t.Helper()
	var texts []string
	if err != nil {
		texts = append(texts, err.Error())
	}
	if cfg != nil {
		texts = append(texts, cfg.Warnings...)
	}
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q leaked into %q", s, text)
			}
		}
	}
}

// problemLines splits a load error into its lines, asserting its type.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded, want errors")
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *Error: %v", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	return strings.Split(err.Error(), "\n")
}

// want is one expected problem: its line and a fragment of its message.
type want struct {
	line int
	msg  string
}

func checkProblems(t *testing.T, file string, err error, wants []want) {
	t.Helper()
	lines := problemLines(t, err)
	if len(lines) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(wants), err)
	}
	for i, w := range wants {
		prefix := file + ":" + strconv.Itoa(w.line) + ": "
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("problem %d = %q, want prefix %q", i, lines[i], prefix)
		}
		if !strings.Contains(lines[i], w.msg) {
			t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w.msg)
		}
	}
}

func TestLoad_ErrorsWithFileAndLine(t *testing.T) {
	tests := []struct {
		file  string
		wants []want
	}{
		{"unknown-key-line12.yaml", []want{{12, `unknown key "tokn" in channels.telegram`}}},
		{"wrong-type.yaml", []want{
			{2, "server.listen: want a string, not a list"},
			{4, "policy.allow_private_networks: want true or false, not a string"},
			{5, "policy.limits.max_tasks: want a whole number, not a string"},
		}},
		{"bad-duration.yaml", []want{{7, `tasks[0].remind_before[1]: invalid duration "3x"`}}},
		{"bad-schedule.yaml", []want{{6, `tasks[0].schedule: invalid schedule "weekly on mondays"`}}},
		{"bad-schedule-zone.yaml", []want{{6, `tasks[0].schedule: invalid schedule "daily 08:00 Mars/Olympus_Mons": unknown time zone "Mars/Olympus_Mons"`}}},
		{"bad-zone.yaml", []want{{1, `timezone: unknown time zone "Asia/Beijing"`}}},
		{"bad-recipient-zone.yaml", []want{{4, `recipients.me.timezone: unknown time zone "CST"`}}},
		{"bad-principal.yaml", []want{
			{2, `policy.admins[0]: malformed principal "telegram:alice"`},
			{2, `policy.admins[2]: malformed principal "telegram:*"`},
			{3, `policy.requesters[1]: malformed principal "slack:*"`},
			{5, `policy.auto_approve[0].principals[0]: malformed principal "matrix:@a"`},
		}},
		{"agent-admin.yaml", []want{{7, `policy.admins[1]: an agent cannot be an admin ("agent:helper")`}}},
		{"bad-address.yaml", []want{
			{3, "recipients.ops-chat.address: telegram chat id must be an integer"},
			{5, "recipients.me.address: inbox principal must look like"},
			{7, "recipients.empty.address: is empty"},
		}},
		{"unknown-recipient.yaml", []want{{7, `tasks[0].notify[1]: no recipient named "team-alerts"`}}},
		{"unknown-route.yaml", []want{{7, `inbound.ci.route[1]: no recipient named "ops"`}}},
		{"duplicate-task-id.yaml", []want{{8, `tasks[1].id: duplicate task id "news" (first at line 4)`}}},
		{"webhook-http.yaml", []want{
			{3, "recipients.ops.webhook.url: must use https"},
			{5, "recipients.local.webhook.url: must use https"},
		}},
		{"webhook-secret.yaml", []want{
			{3, "recipients.ops.webhook.secret: must be whsec_ followed by base64"},
			{5, "recipients.ops2.webhook.secret: must be whsec_ followed by base64 (it does not decode)"},
		}},
		{"webhook-retry.yaml", []want{
			{3, "recipients.ops.webhook.retry_schedule: each wait must be more than 0s and at most 168h0m0s"},
			{5, "recipients.ops2.webhook.disable_after: must be a duration of 0s (never) or more"},
		}},
		{"feishu-bot-no-url.yaml", []want{{3, "recipients.team-alerts.feishu_bot: url is required"}}},
		{"recipient-kinds.yaml", []want{
			{2, "recipients.nothing: set exactly one of feishu_bot, webhook, wecom_bot, dingtalk_bot, email, slack, discord, ntfy, bark, onebot, pushplus, serverchan and address"},
			{4, "recipients.both: set exactly one of feishu_bot, webhook, wecom_bot, dingtalk_bot, email, slack, discord, ntfy, bark, onebot, pushplus, serverchan and address"},
		}},
		{"inbound-format.yaml", []want{{5, `inbound.ci.format: unknown format "gitlab" (want standard or github)`}}},
		{"inbound-no-secret.yaml", []want{{4, "inbound.ci: a secret is required"}}},
		{"redis-shards.yaml", []want{
			{5, "store.redis.shards: must be between 1 and 1024"},
			{6, "store.redis.lease_ttl: must be between 1s and 5m0s"},
		}},
		{"duplicate-key.yaml", []want{{3, `duplicate key "listen" in server (first at line 2)`}}},
		{"duplicate-url-rss.yaml", []want{{5, `duplicate key "url" in tasks[0].source (first at line 5)`}}},
		{"json-source-both.yaml", []want{{5, "tasks[0].source: the item URL field is given twice"}}},
		{"rsshub-instances.yaml", []want{
			{4, "sources.rsshub.instances[0].url: want an http or https URL"},
			{5, "sources.rsshub.instances[1].url: want the instance's base URL, without a query or fragment"},
			{6, "sources.rsshub.instances[2]: url is required"},
			{8, "sources.rsshub.instances[4].url: the same instance as sources.rsshub.instances[3]"},
			{13, "tasks[0].source.route: an RSSHub route starts with /"},
			{17, "tasks[1].source.url: an rsshub source has a route, not a url"},
			{21, "tasks[2].source: route is required for kind rsshub"},
		}},
		{"rsshub-no-instance.yaml", []want{{5, "tasks[0].source.kind: kind rsshub needs an instance in sources.rsshub.instances"}}},
		{"syntax-error.yaml", []want{{3, "yaml: "}}},
		{"unset-env.yaml", []want{{5, "inbound.ci.secret: uses ${CI_WEBHOOK_SECRET}, which is not set"}}},
		{"channel-bad-mode.yaml", []want{{5, `channels.telegram.mode: unknown mode "longpoll"`}}},
		{"secrets-file-missing.yaml", []want{{1, "secrets_file: cannot read does-not-exist.yaml"}}},
		{"assistant-bad-endpoint.yaml", []want{{4, "assistant.endpoint: must use https (http only for loopback hosts with policy.allow_private_networks: true)"}}},
		{"assistant-unknown-key.yaml", []want{{5, `unknown key "temperature" in assistant`}}},
		{"source-auth-bad.yaml", []want{
			{9, "tasks[0].source.auth: auth takes a cookie or a login, not both"},
			{19, `tasks[1].source.render: render must be "browser" or left out`},
			{21, "tasks[1].source.auth.login.form: form names the fields to fill in"},
			{22, "tasks[1].source.auth.login.url: want the http or https address of the sign-in page"},
			{25, "browser.max_parallel: must be between 1 and 16"},
			{25, "browser.memory_mb: must be at least 128"},
		}},
		{"render-no-browser.yaml", []want{
			{11, "tasks[0].source.render: render: browser needs Chromium: no browser: browser.path /nonexistent/chromium is not an executable file"},
		}},
		{"digest-bad.yaml", []want{
			{4, `recipients.me.digest: invalid schedule "daily 25:00"`},
			{5, "recipients.me.digest_max_items: must be between 1 and 1000"},
			{6, `recipients.me.translate: unknown language "fr" (want en or zh)`},
		}},
		{"assistant-bounds.yaml", []want{
			{1, "assistant: model is required"},
			{2, "assistant.endpoint: must use https"},
			{4, "assistant.timeout: must be a positive duration of at most 2m0s"},
			{5, "assistant.max_per_hour: must be between 1 and 1000"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			cfg, err := LoadEnv(path, noEnv)
			if cfg != nil {
				t.Errorf("Load returned a config alongside errors")
			}
			checkProblems(t, path, err, tt.wants)
		})
	}
}

func TestLoad_EveryProblemAtOnceSortedByLine(t *testing.T) {
	path := filepath.Join("testdata", "several-errors.yaml")
	_, err := LoadEnv(path, noEnv)
	checkProblems(t, path, err, []want{
		{3, `unknown key "colour" in server`},
		{4, `timezone: unknown time zone "Europe/Atlantis"`},
		{6, `policy.admins[0]: malformed principal "telegram:x"`},
		{9, "recipients.ops.webhook.url: must use https"},
		{9, "recipients.ops.webhook.secret: must be whsec_"},
		{13, `tasks[0].schedule: invalid schedule "every 5x"`},
		{14, `tasks[0].remind_before[0]: invalid duration "1fortnight"`},
		{15, `tasks[0].notify[0]: no recipient named "nobody"`},
		{16, `tasks[1].id: duplicate task id "a" (first at line 11)`},
	})
}

func TestLoad_SecretsFileProblemsNameThatFile(t *testing.T) {
	_, err := LoadEnv(filepath.Join("testdata", "secrets-file.yaml"), noEnv)
	checkProblems(t, filepath.Join("testdata", "secrets", "bad-secrets.yaml"), err, []want{
		{2, "NESTED: want a string, not a mapping"},
	})
}

func TestLoad_SecretsFileBeforeEnvironment(t *testing.T) {
	if err := os.Chmod(filepath.Join("testdata", "secrets", "good-secrets.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadEnv(filepath.Join("testdata", "secrets-file-ok.yaml"),
		env("TELEGRAM_BOT_TOKEN", "from-the-environment"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Channels.Telegram.Token; got != "123456:file-token-AAAA" {
		t.Errorf("token = %q, want the secrets file's value", got)
	}
	if !cfg.Channels.Telegram.Enabled || len(cfg.Warnings) != 0 {
		t.Errorf("enabled = %v, warnings = %q", cfg.Channels.Telegram.Enabled, cfg.Warnings)
	}
	if got := cfg.Inbound["ci"].AllSecrets(); len(got) != 1 || got[0] != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Errorf("inbound secrets = %q", got)
	}
}

// specEnv sets every variable the full example configuration names.
var specEnv = env(
	"TELEGRAM_BOT_TOKEN", "123456:tg-token-value",
	"TELEGRAM_WEBHOOK_SECRET", "tg_hook_secret",
	"FEISHU_APP_ID", "cli_app",
	"FEISHU_APP_SECRET", "feishu-app-secret-value",
	"FEISHU_VERIFICATION_TOKEN", "verif",
	"FEISHU_ENCRYPT_KEY", "enc",
	"FEISHU_BOT_SECRET", "bot-signing-secret",
	"OPS_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"CI_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"API_TOKEN", "api-token-value",
)

func TestLoad_SecretsFileReadableByOthersWarns(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("T: \"1:tok\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadString(t, "secrets_file: "+filepath.Join(dir, "s.yaml")+"\nchannels: {telegram: {enabled: true, token: \"${T}\"}}\n", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "readable by others") || !cfg.Channels.Telegram.Enabled {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	assertNoSecret(t, cfg, nil, "1:tok")
}

func TestLoad_SpecExample(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "spec-example.yaml"), specEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Location.String() != "Asia/Shanghai" {
		t.Errorf("location = %v", cfg.Location)
	}
	if !cfg.Channels.Telegram.Enabled || cfg.Channels.Telegram.Token != "123456:tg-token-value" {
		t.Errorf("telegram = %+v", cfg.Channels.Telegram)
	}
	if cfg.Channels.Feishu.Enabled {
		t.Errorf("feishu enabled, want disabled as written")
	}
	if cfg.Channels.Telegram.APIURL != DefaultTelegramAPIURL || cfg.Channels.Feishu.BaseURL != DefaultFeishuBaseURL {
		t.Errorf("default URLs not applied: %q %q", cfg.Channels.Telegram.APIURL, cfg.Channels.Feishu.BaseURL)
	}
	if got := cfg.Store.BoltPath("/var/lib/herald"); got != "./data/herald.db" {
		t.Errorf("bolt path = %q", got)
	}
	if r := cfg.Recipients["ops"]; r.Webhook == nil || r.Webhook.URL != "https://hooks.example.com/herald" {
		t.Errorf("ops = %+v", r)
	}
	if len(cfg.Tasks) != 4 {
		t.Fatalf("tasks = %d", len(cfg.Tasks))
	}
	hw, _ := cfg.Task("homework")
	if want := []Duration{Duration(72 * time.Hour), Duration(24 * time.Hour), Duration(2 * time.Hour)}; fmt.Sprint(hw.RemindBefore) != fmt.Sprint(want) {
		t.Errorf("remind_before = %v", hw.RemindBefore)
	}
	rel, _ := cfg.Task("releases")
	src := rel.Source
	if src.URL != "https://api.example.com/releases" || src.Link != "html_url" || src.Items != "data" || src.Title != "name" {
		t.Errorf("json source = %+v", src)
	}
	if src.Headers["Authorization"] != "Bearer api-token-value" {
		t.Errorf("header not expanded")
	}
	if rel.Name != "releases" {
		t.Errorf("name default = %q, want the id", rel.Name)
	}
	if ci := cfg.Inbound["ci"]; ci.Format != "standard" || len(ci.Route) != 2 || ci.Template == "" {
		t.Errorf("inbound = %+v", ci)
	}
}

func TestLoad_SpecExampleWithoutEnvironmentNamesEachUnsetVariable(t *testing.T) {
	path := filepath.Join("testdata", "spec-example.yaml")
	cfg, err := LoadEnv(path, noEnv)
	checkProblems(t, path, err, []want{
		{35, "recipients.team-alerts.feishu_bot.secret: uses ${FEISHU_BOT_SECRET}, which is not set"},
		{37, "recipients.ops.webhook.secret: uses ${OPS_WEBHOOK_SECRET}, which is not set"},
		{43, "inbound.ci.secret: uses ${CI_WEBHOOK_SECRET}, which is not set"},
		{59, "tasks[2].source.headers.Authorization: uses ${API_TOKEN}, which is not set"},
	})
	if cfg != nil {
		t.Error("config returned with errors")
	}
}

func TestLoad_JSONSourceItemURL(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "json-source.yaml"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range cfg.Tasks {
		if task.Source.URL != "https://api.example.com/releases" || task.Source.Link != "html_url" {
			t.Errorf("%s: source = %+v", task.ID, task.Source)
		}
	}
}

func TestLoad_HTTPLoopbackRecipientNeedsPrivateNetworks(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "webhook-http-loopback-private.yaml"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Recipients["local"].Webhook.Policy(); len(p.Schedule) == 0 {
		t.Error("a webhook recipient must be idempotent, with a retry schedule, by default (SPEC §21)")
	}
}

// TestSpec21_WebhookRetryKeys: retry_schedule and disable_after are read
// as written; idempotent: false leaves no schedule (I3).
func TestSpec21_WebhookRetryKeys(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "webhook-policy.yaml"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	fast := cfg.Recipients["fast"].Webhook.Policy()
	if !slices.Equal(fast.Schedule, []time.Duration{time.Second, 2 * time.Minute}) || fast.DisableAfter != 0 {
		t.Errorf("fast: %+v; want [1s 2m], never disabled for failing", fast)
	}
	once := cfg.Recipients["once"].Webhook.Policy()
	if once.Schedule != nil || once.DisableAfter != 48*time.Hour {
		t.Errorf("once: %+v; want no schedule, disable after 48h", once)
	}
}

func TestLoad_EnvExpansion(t *testing.T) {
	path := filepath.Join("testdata", "channels-env.yaml")
	tests := []struct {
		name     string
		lookup   func(string) (string, bool)
		enabled  bool
		warnings []string
	}{
		{"all set", env("TELEGRAM_BOT_TOKEN", "1:tok", "TELEGRAM_WEBHOOK_SECRET", "s3cr3t"), true, nil},
		{"token unset: channel off", env("TELEGRAM_WEBHOOK_SECRET", "s3cr3t"), false,
			[]string{"telegram: token not set; channel off"}},
		{"token set empty: channel off", env("TELEGRAM_BOT_TOKEN", "", "TELEGRAM_WEBHOOK_SECRET", "s3cr3t"), false,
			[]string{"telegram: token not set; channel off"}},
		{"nothing set", noEnv, false, []string{"telegram: token and webhook_secret not set; channel off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Unset variables of the disabled feishu channel and of the
			// unused redis store are not errors.
			cfg, err := LoadEnv(path, tt.lookup)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Channels.Telegram.Enabled != tt.enabled {
				t.Errorf("enabled = %v, want %v", cfg.Channels.Telegram.Enabled, tt.enabled)
			}
			if fmt.Sprint(cfg.Warnings) != fmt.Sprint(tt.warnings) {
				t.Errorf("warnings = %q, want %q", cfg.Warnings, tt.warnings)
			}
		})
	}
}

func TestLoad_UnsetVariableInUsedFeatureIsAnError(t *testing.T) {
	src := "store:\n  driver: redis\n  redis: {url: \"${REDIS_URL}\"}\n"
	_, err := loadString(t, src, noEnv)
	checkProblems(t, "herald.yaml", err, []want{{3, "store.redis.url: uses ${REDIS_URL}, which is not set"}})
}

// loadString loads src from a temporary herald.yaml, reporting paths
// relative to its directory.
func loadString(t *testing.T, src string, lookup func(string) (string, bool)) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "herald.yaml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return LoadEnv("herald.yaml", lookup)
}

func TestLoad_ExampleConfigWithEmptyEnvironment(t *testing.T) {
	cfg, err := LoadEnv("herald.example.yaml", noEnv)
	if err != nil {
		t.Fatalf("the example config must load on a fresh machine:\n%v", err)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" {
		t.Errorf("listen = %q", cfg.Server.Listen)
	}
	if cfg.Channels.Telegram.Enabled || cfg.Channels.Feishu.Enabled {
		t.Error("channels without tokens must switch off")
	}
	wantWarn := []string{"telegram: token not set; channel off", "feishu: app_id and app_secret not set; channel off"}
	if fmt.Sprint(cfg.Warnings) != fmt.Sprint(wantWarn) {
		t.Errorf("warnings = %q, want %q", cfg.Warnings, wantWarn)
	}
	if fmt.Sprint(cfg.Policy.Requesters) != "[telegram:* feishu:* console:* agent:*]" {
		t.Errorf("requesters = %q", cfg.Policy.Requesters)
	}
	if !contains(cfg.Policy.Admins, "console:admin") {
		t.Errorf("admins = %q, want console:admin among them", cfg.Policy.Admins)
	}
	if cfg.Store.Driver != "bolt" || cfg.Store.BoltPath("data") != filepath.Join("data", "herald.db") {
		t.Errorf("store = %+v", cfg.Store)
	}
}

func TestLoad_ExampleConfigSwitchesChannelsOnWithTokens(t *testing.T) {
	cfg, err := LoadEnv("herald.example.yaml", env(
		"TELEGRAM_BOT_TOKEN", "1:tok", "FEISHU_APP_ID", "cli_x", "FEISHU_APP_SECRET", "sec"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Channels.Telegram.Enabled || !cfg.Channels.Feishu.Enabled || len(cfg.Warnings) != 0 {
		t.Errorf("telegram %v feishu %v warnings %q", cfg.Channels.Telegram.Enabled, cfg.Channels.Feishu.Enabled, cfg.Warnings)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestI10_SecretsNeverInErrors(t *testing.T) {
	const (
		hookSecret = "hunter2-webhook-secret"
		botURL     = "http://open.feishu.cn/open-apis/bot/v2/hook/tok-98765"
		principal  = "telegram:not-a-number-but-private"
		hdr        = "Bearer api-token-xyz"
	)
	src := `recipients:
  ops:
    webhook: {url: "https://hooks.example.com/h", secret: "${HOOK}"}
  bot:
    feishu_bot: {url: "${BOT_URL}"}
policy:
  admins: ["${ADMIN}"]
inbound:
  ci:
    secret: "${HOOK}"
    route: [ops, "${ADMIN}"]
tasks:
  - id: t
    source: {kind: rss, url: "https://x.example.edu/f", headers: {Authorization: "${HDR}"}}
    schedule: "every ${HDR}"
    notify: [ops]
`
	cfg, err := loadString(t, src, env("HOOK", hookSecret, "BOT_URL", botURL, "ADMIN", principal, "HDR", hdr))
	lines := problemLines(t, err)
	if len(lines) < 5 {
		t.Errorf("want a problem per bad value, got:\n%v", err)
	}
	assertNoSecret(t, cfg, err, hookSecret, botURL, "tok-98765", principal, hdr, "api-token-xyz")
}

func TestLoad_ScheduleUsesDefaultZone(t *testing.T) {
	var gotZone *time.Location
	var gotText string
	old := parseSchedule
	t.Cleanup(func() { parseSchedule = old })
	// A stand-in for the schedule parser: records what it was given.
	parseSchedule = func(text string, zone *time.Location) error {
		gotText, gotZone = text, zone
		return nil
	}
	src := "timezone: Asia/Shanghai\nrecipients:\n  me: {address: \"inbox:console:admin\"}\ntasks:\n  - id: a\n    source: {url: \"https://x.example.edu/f\"}\n    schedule: daily 08:00\n    notify: [me]\n"
	if _, err := loadString(t, src, noEnv); err != nil {
		t.Fatal(err)
	}
	if gotText != "daily 08:00" || gotZone == nil || gotZone.String() != "Asia/Shanghai" {
		t.Errorf("parseSchedule(%q, %v)", gotText, gotZone)
	}
}

func TestDuration_AcceptsDays(t *testing.T) {
	src := "recipients:\n  me: {address: \"inbox:console:admin\"}\ntasks:\n  - id: a\n    source: {url: \"https://x.example.edu/f\"}\n    schedule: every 1d\n    remind_before: [3d, 1d12h, 90m]\n    notify: [me]\n"
	cfg, err := loadString(t, src, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := []Duration{Duration(72 * time.Hour), Duration(36 * time.Hour), Duration(90 * time.Minute)}
	if fmt.Sprint(cfg.Tasks[0].RemindBefore) != fmt.Sprint(want) {
		t.Errorf("remind_before = %v, want %v", cfg.Tasks[0].RemindBefore, want)
	}
}

func TestLoad_EmptyFileIsAllDefaults(t *testing.T) {
	cfg, err := loadString(t, "", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Policy.Limits
	if l.MaxTasks != 10000 || l.MaxTasksPerOwner != 50 || l.PerHost.Concurrency != 4 || l.PerHost.PerMinute != 600 || l.HistoryRuns != 30 || l.MaxItemsPerRun != 100 || l.ConcurrentRuns != 4 || cfg.Language != "en" || cfg.Location != time.UTC {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestI7_LimitsConfigurableDownNeverUnbounded(t *testing.T) {
	cfg, err := loadString(t, "policy:\n  limits: {max_tasks: 5}\n", noEnv)
	if err != nil || cfg.Policy.Limits.MaxTasks != 5 {
		t.Fatalf("lowering a limit: %v", err)
	}
	cfg, err = loadString(t, "policy:\n  limits: {concurrent_runs: 16}\n", noEnv)
	if err != nil || cfg.Policy.Limits.ConcurrentRuns != 16 {
		t.Fatalf("raising concurrent runs: %v", err)
	}
	cfg, err = loadString(t, "policy:\n  limits: {max_tasks: 1000000, max_tasks_per_owner: 1000}\n", noEnv)
	if err != nil || cfg.Policy.Limits.MaxTasks != 1000000 || cfg.Policy.Limits.MaxTasksPerOwner != 1000 {
		t.Fatalf("raising the task bounds to their ceilings: %v", err)
	}
	_, err = loadString(t, "policy:\n  limits:\n    max_tasks: 1000001\n    history_runs: -1\n    concurrent_runs: 1000\n    max_tasks_per_owner: 1001\n    per_host: {concurrency: 0, per_minute: 60001}\n    inbox_items: 200000\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{3, "policy.limits.max_tasks: must be between 1 and 1000000"},
		{4, "policy.limits.history_runs: must be between 1 and 30"},
		{5, "policy.limits.concurrent_runs: must be between 1 and 64"},
		{6, "policy.limits.max_tasks_per_owner: must be between 1 and 1000"},
		{7, "policy.limits.per_host.per_minute: must be between 1 and 60000"},
		{8, "policy.limits.inbox_items: must be between 1 and 100000"},
	})
}

// TestI7_InboxItemsIsADocumentedBoundedSetting: policy.limits.inbox_items
// defaults to 1,000 items per inbox, may be set lower or higher, and is
// never unbounded; a bad value is refused with its file and line.
func TestI7_InboxItemsIsADocumentedBoundedSetting(t *testing.T) {
	doc, err := os.ReadFile("herald.example.yaml")
	if err != nil || !strings.Contains(string(doc), "inbox_items: 1000") {
		t.Errorf("herald.example.yaml does not document inbox_items (%v)", err)
	}
	cfg, err := loadString(t, "", noEnv)
	if err != nil || cfg.Policy.Limits.InboxItems != 1000 {
		t.Fatalf("default inbox_items = %d (%v), want 1000", cfg.Policy.Limits.InboxItems, err)
	}
	cfg, err = loadString(t, "policy:\n  limits: {inbox_items: 5000}\n", noEnv)
	if err != nil || cfg.Policy.Limits.InboxItems != 5000 {
		t.Fatalf("raising inbox_items: %d (%v)", cfg.Policy.Limits.InboxItems, err)
	}
	_, err = loadString(t, "language: en\npolicy:\n  limits:\n    inbox_items: -3\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{4, "policy.limits.inbox_items: must be between 1 and 100000"}})
}

// Config-declared tasks count toward the total: a file declaring more
// tasks than max_tasks is refused at the bound's line (I7).
func TestI7_DeclaredTasksCountTowardTheTotal(t *testing.T) {
	task := func(id string) string {
		return "  - {id: " + id + ", source: {kind: rss, url: \"https://news.example.edu/" + id + ".xml\"}, schedule: every 1h, notify: [\"inbox:console:admin\"]}\n"
	}
	_, err := loadString(t, "policy:\n  admins: [\"console:admin\"]\n  limits: {max_tasks: 2}\ntasks:\n"+task("a")+task("b")+task("c"), noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{3, "policy.limits.max_tasks: the file declares 3 tasks, more than max_tasks (2) allows in all"},
	})
	if _, err := loadString(t, "policy:\n  admins: [\"console:admin\"]\n  limits: {max_tasks: 3}\ntasks:\n"+task("a")+task("b")+task("c"), noEnv); err != nil {
		t.Fatalf("three tasks within max_tasks 3: %v", err)
	}
}

func BenchmarkLoadSpecExample(b *testing.B) {
	path := filepath.Join("testdata", "spec-example.yaml")
	for b.Loop() {
		if _, err := LoadEnv(path, specEnv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoad_ExampleConfigCommentedExamplesAreValid uncomments the example
// recipients, inbound hook and tasks of the reference file and loads it
// with their secrets set: the documentation must not drift from the code.
func TestLoad_ExampleConfigCommentedExamplesAreValid(t *testing.T) {
	src, err := os.ReadFile("herald.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "inbound: {}\n", "inbound:\n", 1)
	text = strings.Replace(text, "tasks: []\n", "tasks:\n", 1)
	var out []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "#  "):
			line = " " + line[1:]
		case strings.HasPrefix(line, "  # "):
			line = "  " + line[4:]
		}
		out = append(out, line)
	}
	text = strings.Join(out, "\n")
	if !strings.Contains(text, "\n# assistant:\n") {
		t.Fatal("the reference config no longer shows the assistant section")
	}
	text = strings.Replace(text, "\n# assistant:\n", "\nassistant:\n", 1)
	if !strings.Contains(text, "\n# smtp:\n") {
		t.Fatal("the reference config no longer shows the smtp section")
	}
	text = strings.Replace(text, "\n# smtp:\n", "\nsmtp:\n", 1)
	if !strings.Contains(text, "\n# sources:\n") {
		t.Fatal("the reference config no longer shows the sources section")
	}
	text = strings.Replace(text, "\n# sources:\n", "\nsources:\n", 1)
	if !strings.Contains(text, "\n# browser:\n") {
		t.Fatal("the reference config no longer shows the browser section")
	}
	text = strings.Replace(text, "\n# browser:\n", "\nbrowser:\n", 1)
	lookup := func(name string) (string, bool) {
		switch name {
		case "HERALD_ASSISTANT_KEY":
			return "sk-example-key", true
		case "WECOM_KEY", "DING_TOKEN":
			return "k3y-example", true
		case "NTFY_TOPIC", "NTFY_TOKEN", "BARK_KEY":
			return "k3y-example", true
		case "DING_SECRET":
			return "SECexample", true
		case "CANVAS_TOKEN":
			return "7~example", true
		case "SMTP_PASSWORD":
			return "smtp-example-password", true
		case "RSSHUB_ACCESS_KEY":
			return "rsshub-example-key", true
		case "PORTAL_USER", "PORTAL_PASSWORD":
			return "example", true
		case "SLACK_WEBHOOK_PATH":
			return "T0EXAMPLE/B0EXAMPLE/example", true
		case "DISCORD_TOKEN":
			return "t0ken-example", true
		case "ONEBOT_TOKEN", "PUSHPLUS_TOKEN", "SERVERCHAN_KEY":
			return "SCTexample", true
		}
		return specEnv(name)
	}
	cfg, err := loadString(t, text, lookup)
	if err != nil {
		t.Fatalf("uncommented example:\n%v", err)
	}
	if a := cfg.Assistant; !a.Enabled || a.APIKey != "sk-example-key" || a.Timeout.D() != 20*time.Second || a.MaxPerHour != 30 {
		t.Errorf("assistant = %+v", a)
	}
	if s := cfg.SMTP; s == nil || s.Host != "smtp.example.com" || s.Password != "smtp-example-password" || s.Mode() != "starttls" {
		t.Errorf("smtp = %+v", s)
	}
	if in := cfg.Sources.RSSHub.Instances; len(in) != 2 || in[1].Key != "rsshub-example-key" {
		t.Errorf("sources.rsshub.instances = %+v", in)
	}
	if len(cfg.Recipients) != 15 || len(cfg.Inbound) != 1 || len(cfg.Tasks) != 7 {
		t.Errorf("recipients %d, inbound %d, tasks %d: an example block did not uncomment", len(cfg.Recipients), len(cfg.Inbound), len(cfg.Tasks))
	}
	if cs, _ := cfg.Task("cs101"); cs.Source.Download == nil || cs.Source.Download.Dir != "cs101" || cs.Source.Download.MaxPerRun != 100 {
		t.Errorf("cs101 source = %+v", cs.Source)
	}
	if pt, _ := cfg.Task("portal"); pt.Source.Auth == nil || pt.Source.Auth.Login == nil || pt.Source.Auth.Login.Check != "PORTALSESSION" ||
		pt.Source.Auth.Login.Form["password"] != "example" {
		t.Errorf("portal source = %+v", pt.Source)
	}
	if b := cfg.Browser; b.MaxParallel != 2 || b.Timeout.D() != 20*time.Second || b.MemoryMB != 1024 {
		t.Errorf("browser = %+v", b)
	}
	if rel, _ := cfg.Task("releases"); rel.Source.Link != "html_url" {
		t.Errorf("releases source = %+v", rel.Source)
	}
	if d := cfg.Recipients["evening-digest"]; d.Digest != "daily 20:00 Asia/Shanghai" || d.DigestMaxItems != 50 || d.Translate != "zh" {
		t.Errorf("evening-digest = %+v", d)
	}
}

// TestLoad_Assistant: the assistant is on only with both an endpoint and a
// key; a present section lacking one is off with one warning line, and an
// unset key variable is not an error then; the endpoint follows the rules
// of every other outbound URL.
func TestLoad_Assistant(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	section := func(endpoint, extra string) string {
		return "assistant:\n  endpoint: \"" + endpoint + "\"\n  api_key: \"${HERALD_ASSISTANT_KEY}\"\n  model: small\n" + extra
	}
	tests := []struct {
		name    string
		src     string
		env     func(string) (string, bool)
		on      bool
		warning string
		problem string // a fragment of the one expected problem
	}{
		{name: "absent", src: "language: en\n", env: noEnv},
		{name: "key unset", src: section("https://models.example.com/v1/chat/completions", ""), env: noEnv,
			warning: "assistant: api_key not set; assistant off"},
		{name: "endpoint empty", src: section("", ""), env: env("HERALD_ASSISTANT_KEY", key),
			warning: "assistant: endpoint not set; assistant off"},
		{name: "empty section", src: "assistant: {}\n", env: noEnv,
			warning: "assistant: endpoint and api_key not set; assistant off"},
		{name: "on", src: section("https://models.example.com/v1/chat/completions", ""), env: env("HERALD_ASSISTANT_KEY", key), on: true},
		{name: "http loopback with private networks", src: "policy: {allow_private_networks: true}\n" + section("http://127.0.0.1:8000/v1/chat/completions", ""),
			env: env("HERALD_ASSISTANT_KEY", key), on: true},
		{name: "http loopback without", src: section("http://127.0.0.1:8000/v1/chat/completions", ""),
			env: env("HERALD_ASSISTANT_KEY", key), problem: "herald.yaml:2: assistant.endpoint: must use https"},
		{name: "http public host even with private networks", src: "policy: {allow_private_networks: true}\n" + section("http://models.example.com/v1", ""),
			env: env("HERALD_ASSISTANT_KEY", key), problem: "herald.yaml:3: assistant.endpoint: must use https"},
		{name: "credentials in endpoint", src: section("https://user:"+key+"@models.example.com/v1", ""),
			env: env("HERALD_ASSISTANT_KEY", key), problem: "herald.yaml:2: assistant.endpoint: not a valid absolute URL"},
		{name: "bad timeout", src: section("https://models.example.com/v1", "  timeout: soon\n"),
			env: env("HERALD_ASSISTANT_KEY", key), problem: `herald.yaml:5: assistant.timeout: invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadString(t, tt.src, tt.env)
			assertNoSecret(t, cfg, err, key)
			if tt.problem != "" {
				lines := problemLines(t, err)
				if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.problem) {
					t.Fatalf("problems:\n%v\nwant one starting %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Assistant.Enabled != tt.on {
				t.Errorf("enabled = %v, want %v", cfg.Assistant.Enabled, tt.on)
			}
			var want []string
			if tt.warning != "" {
				want = []string{tt.warning}
			}
			if fmt.Sprint(cfg.Warnings) != fmt.Sprint(want) {
				t.Errorf("warnings = %q, want %q", cfg.Warnings, want)
			}
			if tt.on && (cfg.Assistant.Timeout.D() != 20*time.Second || cfg.Assistant.MaxPerHour != 30 || cfg.Assistant.APIKey != key) {
				t.Errorf("defaults = %+v", cfg.Assistant)
			}
		})
	}
}

func TestWebhookRecipientTimeout(t *testing.T) {
	const base = "recipients:\n  ops:\n    webhook:\n      url: \"https://hooks.example.com/h\"\n      secret: \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
	cfg, err := loadString(t, base+"      timeout: 3s\n", noEnv)
	if err != nil || cfg.Recipients["ops"].Webhook.Timeout.D() != 3*time.Second {
		t.Fatalf("timeout 3s: %v", err)
	}
	_, err = loadString(t, base+"      timeout: 5m\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{6, "recipients.ops.webhook.timeout: must be a duration of at most 2m0s (unset: 10s)"}})
}

// assistant.local trusts exactly one model server named by address, over
// http, without opening private networks to sources.
func TestAssistantLocalEndpoint(t *testing.T) {
	const base = "assistant:\n  api_key: k\n  model: m\n  local: true\n"
	cases := []struct {
		endpoint string
		trusted  []string
		problem  string
	}{
		{endpoint: "http://10.1.2.3:11434/v1/chat/completions", trusted: []string{"10.1.2.3:11434"}},
		{endpoint: "http://localhost:8000/v1/chat/completions", trusted: []string{"127.0.0.1:8000", "[::1]:8000"}},
		{endpoint: "https://[fd00::5]/v1/chat/completions", trusted: []string{"[fd00::5]:443"}},
		{endpoint: "http://models.lan:11434/v1", problem: `assistant.endpoint: with local: true, name the model server by IP address or localhost, not "models.lan"`},
		{endpoint: "ftp://10.1.2.3/x", problem: "assistant.endpoint: not a valid http(s) URL"},
	}
	for _, c := range cases {
		t.Run(c.endpoint, func(t *testing.T) {
			cfg, err := loadString(t, base+"  endpoint: \""+c.endpoint+"\"\n", noEnv)
			if c.problem != "" {
				checkProblems(t, "herald.yaml", err, []want{{5, c.problem}})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Policy.AllowPrivateNetworks {
				t.Fatal("local: true must not open private networks")
			}
			var got []string
			for _, ap := range cfg.Assistant.TrustedEndpoint() {
				got = append(got, ap.String())
			}
			if !slices.Equal(got, c.trusted) {
				t.Fatalf("trusted %v, want %v", got, c.trusted)
			}
		})
	}
}

func TestRestartOnly(t *testing.T) {
	base := func() *Config {
		c := &Config{Language: "en"}
		c.Server.Listen = "127.0.0.1:8080"
		c.Channels.Telegram.Token = "123:abc"
		return c
	}
	cases := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"nothing", func(*Config) {}, nil},
		{"policy and language reload", func(c *Config) { c.Language = "zh"; c.Policy.Admins = []string{"console:x"} }, nil},
		{"listener", func(c *Config) { c.Server.Listen = "127.0.0.1:9090" }, []string{"server"}},
		{"tls", func(c *Config) { c.Server.TLS.CertFile = "c.pem" }, []string{"server"}},
		{"store", func(c *Config) { c.Store.Redis.URL = "redis://r:6379/0" }, []string{"store"}},
		{"telegram token", func(c *Config) { c.Channels.Telegram.Token = "123:def" }, []string{"channels.telegram"}},
		{"feishu app", func(c *Config) { c.Channels.Feishu.AppID = "cli_x" }, []string{"channels.feishu"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.edit(n)
			if got := RestartOnly(base(), n); !slices.Equal(got, c.want) {
				t.Fatalf("RestartOnly = %v, want %v", got, c.want)
			}
		})
	}
}

// TestNotices_ModelPartsOffWithoutAssistant: translate and summarize set
// without an assistant load, and check-config says, at their lines, that
// notices go out without the model's text (SPEC §20).
func TestNotices_ModelPartsOffWithoutAssistant(t *testing.T) {
	path := filepath.Join("testdata", "notices-without-assistant.yaml")
	cfg, err := LoadEnv(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "the assistant is not configured") {
			got = append(got, w)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], ":5: recipients.me.translate") || !strings.Contains(got[1], ":11: tasks[0].summarize") {
		t.Errorf("warnings %q; want translate at line 5 and summarize at line 11", got)
	}
	if r := cfg.Recipients["me"]; r.Digest != "daily 20:00 Asia/Shanghai" || r.Translate != "zh" || !cfg.Tasks[0].Summarize {
		t.Errorf("decoded %+v, %+v", r, cfg.Tasks[0])
	}
}
