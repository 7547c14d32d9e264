// Package configs loads herald's YAML configuration file (docs/configuration.md, Configuration): strict
// decoding with file:line errors, ${VAR} expansion from a secrets file and
// the environment, defaults, validation that reports every problem at once,
// and a Coordinator that reloads the file and notifies subscribers.
package configs

import (
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery/email"
	"github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Defaults (README, The promise: I7; Configuration).
const (
	DefaultListen         = "127.0.0.1:8080"
	DefaultDriver         = "bolt"
	DefaultBoltFile       = "herald.db"
	DefaultRedisKeyPrefix = "herald:"
	DefaultRedisShards    = 64
	MaxRedisShards        = 1024
	DefaultLeaseTTL       = 15 * time.Second
	MinLeaseTTL           = time.Second
	MaxLeaseTTL           = 5 * time.Minute
	DefaultTelegramAPIURL = "https://api.telegram.org"
	DefaultFeishuBaseURL  = "https://open.feishu.cn"
	DefaultLanguage       = "en"
	DefaultMaxTasks       = 10000
	MaxMaxTasks           = 1000000
	DefaultMaxPerOwner    = 50
	MaxMaxPerOwner        = 1000
	DefaultPerHostRuns    = 4
	MaxPerHostRuns        = 64
	DefaultPerHostMinute  = 600
	MaxPerHostMinute      = 60000
	DefaultChatPerMinute  = 30
	DefaultChatBurst      = 10
	MaxChatPerMinute      = 6000
	MaxChatBurst          = 1000
	DefaultHistoryRuns    = 30
	DefaultMaxItemsPerRun = 100
	DefaultConcurrentRuns = 4
	MaxWebhookTimeout     = webhook.MaxTimeout
	MaxConcurrentRuns     = 64
	DefaultInboxItems     = store.InboxCap
	MaxInboxItems         = 100000
	DefaultInboundFormat  = "standard"
	DefaultAssistantTime  = 20 * time.Second
	DefaultAssistantRate  = 30
	MaxAssistantTime      = 2 * time.Minute
	MaxAssistantRate      = 1000
	TelegramModePolling   = "polling"
	TelegramModeWebhook   = "webhook"
	FeishuModeWebsocket   = "websocket"
	FeishuModeWebhook     = "webhook"
	DriverBolt            = "bolt"
	DriverRedis           = "redis"
	InboundFormatStandard = "standard"
	InboundFormatGitHub   = "github"
	// DefaultLedgerRetention keeps ended pushes a month; MinLedgerRetention
	// and MaxLedgerRetention bound store.retention.
	DefaultLedgerRetention = 30 * 24 * time.Hour
	MinLedgerRetention     = time.Minute
	MaxLedgerRetention     = 10 * 365 * 24 * time.Hour
)

// Config is the whole configuration file.
type Config struct {
	// SecretsFile names a YAML map NAME: value whose values are used for
	// ${NAME} before the environment. Relative to the config file.
	SecretsFile string `yaml:"secrets_file"`
	Server      Server `yaml:"server"`
	Store       Store  `yaml:"store"`
	// Timezone is the default zone for schedules (IANA name; default UTC).
	Timezone string `yaml:"timezone"`
	// Language of notices and replies: en | zh (default en).
	Language   string               `yaml:"language"`
	Channels   Channels             `yaml:"channels"`
	Policy     Policy               `yaml:"policy"`
	Recipients map[string]Recipient `yaml:"recipients"`
	Inbound    map[string]Hook      `yaml:"inbound"`
	Tasks      []TaskDecl           `yaml:"tasks"`
	// Assistant is the optional plain-language path (docs/chat.md, Assistant).
	Assistant Assistant `yaml:"assistant"`
	// History bounds the conversation history (docs/chat.md, Memory).
	History History `yaml:"history"`
	// SMTP is the server e-mail recipients are sent through.
	SMTP *email.SMTP `yaml:"smtp"`
	// Sources holds source-kind settings (RSSHub instances).
	Sources Sources `yaml:"sources"`
	// Network is the outbound routes: proxies (SPEC §17; network.go).
	Network Network `yaml:"network"`
	// Browser renders the pages of tasks with render: browser
	// (docs/sources.md, Pages rendered in a browser).
	Browser Browser `yaml:"browser"`

	// Location is Timezone resolved.
	Location *time.Location `yaml:"-"`
	// Path is the file the config was loaded from.
	Path string `yaml:"-"`
	// Warnings are non-fatal findings serve logs once each, such as an
	// enabled channel switched off because its token is not set.
	Warnings []string `yaml:"-"`
}

// SinkSections are the top-level sections handed to sink constructors
// (delivery.SinkDeps.Sections), by YAML key; unset sections are absent.
func (c *Config) SinkSections() map[string]any {
	out := map[string]any{}
	if c.SMTP != nil {
		out[email.SectionKey] = c.SMTP
	}
	return out
}

// Server is the HTTP listener.
type Server struct {
	Listen    string `yaml:"listen"`
	PublicURL string `yaml:"public_url"` // for webhook-mode channels
	TLS       TLS    `yaml:"tls"`
	// TrustedProxies are reverse proxies (addresses or CIDRs) whose
	// X-Forwarded-For names the client; empty: the TCP peer is the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// InboundLimits bound the routes the open internet reaches (listener.go).
	InboundLimits InboundLimits `yaml:"inbound_limits"`
}

// TLS names certificate and key files; both or neither.
type TLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether the listener serves TLS itself.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// Store selects the storage backend.
type Store struct {
	Driver string `yaml:"driver"` // bolt | redis
	Path   string `yaml:"path"`   // bolt file; default <data-dir>/herald.db
	Redis  Redis  `yaml:"redis"`
	// Retention is how long an ended push (completed, failed, unknown)
	// stays in the ledger before it is pruned (docs/performance.md, Performance and
	// footprint). Default 30d.
	Retention Duration `yaml:"retention"`
}

// BoltPath is the bolt file: Path when set, else herald.db in dataDir.
func (s Store) BoltPath(dataDir string) string {
	if s.Path != "" {
		return s.Path
	}
	return filepath.Join(dataDir, DefaultBoltFile)
}

// Redis configures the redis backend.
type Redis struct {
	URL       string `yaml:"url"`
	KeyPrefix string `yaml:"key_prefix"`
	// Shards divides scheduling among the replicas: each task id hashes to
	// one shard, and each shard has its own lease and fencing epoch (I5;
	// README, Sharded scheduling). Every replica on one store must use the same count.
	Shards int `yaml:"shards"`
	// LeaseTTL is a shard lease's lifetime: a dead replica's shards are
	// taken over within it.
	LeaseTTL Duration `yaml:"lease_ttl"`
}

// Channels holds the conversational platforms.
type Channels struct {
	Telegram Telegram `yaml:"telegram"`
	Feishu   Feishu   `yaml:"feishu"`
}

// Telegram configures the Telegram bot. Load switches Enabled off (with a
// warning) when its credentials are empty.
type Telegram struct {
	Enabled       bool   `yaml:"enabled"`
	Token         string `yaml:"token"`
	Mode          string `yaml:"mode"` // polling | webhook
	WebhookSecret string `yaml:"webhook_secret"`
	APIURL        string `yaml:"api_url"`
	// Proxy is the route to the Bot API (SPEC §17): polling, webhook
	// set-up and pushes.
	Proxy string `yaml:"proxy"`
}

// Feishu configures the Feishu (Lark) app. Load switches Enabled off (with
// a warning) when its credentials are empty.
type Feishu struct {
	Enabled           bool   `yaml:"enabled"`
	AppID             string `yaml:"app_id"`
	AppSecret         string `yaml:"app_secret"`
	Mode              string `yaml:"mode"` // websocket | webhook
	VerificationToken string `yaml:"verification_token"`
	EncryptKey        string `yaml:"encrypt_key"`
	BaseURL           string `yaml:"base_url"`
	// Proxy is the route to the open platform (SPEC §17): API calls,
	// tokens, the long connection and pushes.
	Proxy string `yaml:"proxy"`
}

// Assistant configures the optional model that reads plain-language chat
// and drafts a request, lists tasks or explains the commands; it never
// decides anything. Endpoint is an OpenAI-compatible chat-completions URL.
// Load switches it off (with a warning) when the section is present but
// endpoint or api_key is empty; an absent section is off without one.
type Assistant struct {
	Endpoint string `yaml:"endpoint"`
	APIKey   string `yaml:"api_key"` // sent only as the Authorization bearer
	Model    string `yaml:"model"`
	// Timeout bounds one call to the model (default 20s, at most 2m).
	Timeout Duration `yaml:"timeout"`
	// MaxPerHour is how many plain-language asks one principal may make
	// in an hour (default 30).
	MaxPerHour int `yaml:"max_per_hour"`
	// Local says the endpoint is a model server on this machine or the
	// local network, named by IP address (or localhost): herald then trusts
	// exactly that address and port, over http or https, without opening
	// private networks to sources (policy.allow_private_networks).
	Local bool `yaml:"local"`
	// PersonaFile is a Markdown file the admin owns that sets the
	// assistant's voice (relative to the config file; at most
	// MaxPersonaBytes). It is read by Load, so at start and on SIGHUP.
	PersonaFile string `yaml:"persona_file"`
	// Proxy is the route to the model API (SPEC §17).
	Proxy string `yaml:"proxy"`

	// Enabled is decided by Load: endpoint and api_key are both set.
	Enabled bool `yaml:"-"`
	// Persona is PersonaFile's text, read by Load.
	Persona string `yaml:"-"`
}

// TrustedEndpoint returns the addresses a local assistant endpoint
// (Local) may be reached at: its IP and port, or both loopback addresses
// for localhost. Validation has checked the URL.
func (a Assistant) TrustedEndpoint() []netip.AddrPort {
	u, err := url.Parse(a.Endpoint)
	if err != nil {
		return nil
	}
	port := uint16(443)
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil
		}
		port = uint16(n)
	}
	if strings.EqualFold(u.Hostname(), "localhost") {
		return []netip.AddrPort{
			netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
			netip.AddrPortFrom(netip.IPv6Loopback(), port),
		}
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), port)}
}

// Policy says who may do what.
type Policy struct {
	Admins               []string          `yaml:"admins"`
	Requesters           []string          `yaml:"requesters"` // may hold telegram:* style wildcards
	AllowedHosts         []string          `yaml:"allowed_hosts"`
	AllowPrivateNetworks bool              `yaml:"allow_private_networks"`
	AutoApprove          []AutoApproveRule `yaml:"auto_approve"`
	Limits               Limits            `yaml:"limits"`
	// DownloadRoots are absolute directories a task's download.dir may
	// name; a relative dir lives under <data-dir>/downloads/<task-id>/.
	DownloadRoots []string `yaml:"download_roots"`
	// DownloadHosts are the file-storage hosts a course site may redirect
	// a download to ("*.example.net"); empty: Instructure's storage hosts.
	DownloadHosts []string `yaml:"download_hosts"`
}

// AutoApproveRule approves requests from Principals for sources on Hosts.
type AutoApproveRule struct {
	Principals []string `yaml:"principals"`
	Hosts      []string `yaml:"hosts"`
}

// Limits are the I7 bounds: defaults, configurable, never unbounded.
type Limits struct {
	// MaxTasksPerOwner caps the tasks one principal owns (default 50, at
	// most 1,000); MaxTasks caps all tasks, config-declared ones included
	// (default 10,000, at most 1,000,000).
	MaxTasksPerOwner int `yaml:"max_tasks_per_owner"`
	MaxTasks         int `yaml:"max_tasks"`
	HistoryRuns      int `yaml:"history_runs"`
	MaxItemsPerRun   int `yaml:"max_items_per_run"`
	// ConcurrentRuns caps the checks running at once across all sources
	// (default 4, at most MaxConcurrentRuns); a reload applies it.
	ConcurrentRuns int `yaml:"concurrent_runs"`
	// InboxItems is how many items each inbox keeps (default 1,000, at
	// most MaxInboxItems); beyond it read items are dropped first, and
	// the owner is told once when unread ones must go. A reload applies it.
	InboxItems int `yaml:"inbox_items"`
	// PerHost is the politeness cap per source host, across every task
	// that reads it.
	PerHost PerHost `yaml:"per_host"`
	// Chat bounds the chat messages one principal has answered: PerMinute
	// on average, Burst at once (default 30 a minute, bursts of 10).
	Chat ChatRate `yaml:"chat"`
	// StartSpread is the most the checks owed at a start or a takeover of
	// scheduling are spread over, about a second apart (default 3m, 1s to
	// 1h; SPEC §18). A restart applies it.
	StartSpread Duration `yaml:"start_spread"`
}

// The bounds of policy.limits.start_spread.
const (
	DefaultStartSpread = 3 * time.Minute
	MaxStartSpread     = time.Hour
)

// ChatRate is a per-principal token bucket for chat messages.
type ChatRate struct {
	PerMinute int `yaml:"per_minute"`
	Burst     int `yaml:"burst"`
}

// PerHost caps the checks one source host sees: at most Concurrency at
// once and PerMinute started per minute.
type PerHost struct {
	Concurrency int `yaml:"concurrency"`
	PerMinute   int `yaml:"per_minute"`
}

// Hook is an inbound webhook served at /hooks/<name>.
type Hook struct {
	Format string `yaml:"format"` // standard | github
	Secret string `yaml:"secret"`
	// Secrets lists further accepted secrets (rotation: any one verifies).
	Secrets  []string `yaml:"secrets"`
	Route    []string `yaml:"route"`
	Template string   `yaml:"template"`
}

// AllSecrets returns Secret followed by Secrets, without empties.
func (h Hook) AllSecrets() []string {
	var out []string
	if h.Secret != "" {
		out = append(out, h.Secret)
	}
	for _, s := range h.Secrets {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TaskDecl is a task declared in the file (approved by the file's owner).
type TaskDecl struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	// Source is the watched source. In a json source the second "url" key
	// (or "link") is the item URL field path, stored in Link.
	Source       watch.Spec `yaml:"source"`
	Schedule     string     `yaml:"schedule"`
	RemindBefore []Duration `yaml:"remind_before"`
	Notify       []string   `yaml:"notify"` // named recipients or literal addresses
	// Include and Exclude are keywords matched in item titles and URL
	// paths; an exclude match wins; no include keywords means every item.
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// NotifyRemoved makes an item leaving a feed (rss, rsshub) news; and
	// Template lays out the task's notices (SPEC §20).
	NotifyRemoved bool   `yaml:"notify_removed"`
	Template      string `yaml:"template"`
	// Owner is the principal that owns the task; empty: the file's admins.
	Owner string `yaml:"owner"`
	// Summarize asks the assistant for a short summary of each notice.
	Summarize bool `yaml:"summarize"`
}

// RemindDurations returns RemindBefore as time.Durations.
func (t TaskDecl) RemindDurations() []time.Duration {
	if len(t.RemindBefore) == 0 {
		return nil
	}
	out := make([]time.Duration, len(t.RemindBefore))
	for i, d := range t.RemindBefore {
		out[i] = time.Duration(d)
	}
	return out
}

// Duration is a time.Duration written as Go duration text ("72h", "30m").
type Duration = section.Duration

// applyDefaults fills unset values.
func (c *Config) applyDefaults() {
	if c.Server.Listen == "" {
		c.Server.Listen = DefaultListen
	}
	c.Server.InboundLimits.applyDefaults()
	if c.Store.Driver == "" {
		c.Store.Driver = DefaultDriver
	}
	if c.Store.Retention == 0 {
		c.Store.Retention = Duration(DefaultLedgerRetention)
	}
	if c.Store.Redis.KeyPrefix == "" {
		c.Store.Redis.KeyPrefix = DefaultRedisKeyPrefix
	}
	if c.Store.Redis.Shards == 0 {
		c.Store.Redis.Shards = DefaultRedisShards
	}
	if c.Store.Redis.LeaseTTL == 0 {
		c.Store.Redis.LeaseTTL = Duration(DefaultLeaseTTL)
	}
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	if c.Language == "" {
		c.Language = DefaultLanguage
	}
	if c.Channels.Telegram.Mode == "" {
		c.Channels.Telegram.Mode = TelegramModePolling
	}
	if c.Channels.Telegram.APIURL == "" {
		c.Channels.Telegram.APIURL = DefaultTelegramAPIURL
	}
	if c.Channels.Feishu.Mode == "" {
		c.Channels.Feishu.Mode = FeishuModeWebsocket
	}
	if c.Channels.Feishu.BaseURL == "" {
		c.Channels.Feishu.BaseURL = DefaultFeishuBaseURL
	}
	l := &c.Policy.Limits
	if l.MaxTasks == 0 {
		l.MaxTasks = DefaultMaxTasks
	}
	if l.MaxTasksPerOwner == 0 {
		l.MaxTasksPerOwner = DefaultMaxPerOwner
	}
	if l.PerHost.Concurrency == 0 {
		l.PerHost.Concurrency = DefaultPerHostRuns
	}
	if l.Chat.PerMinute == 0 {
		l.Chat.PerMinute = DefaultChatPerMinute
	}
	if l.Chat.Burst == 0 {
		l.Chat.Burst = DefaultChatBurst
	}
	if l.PerHost.PerMinute == 0 {
		l.PerHost.PerMinute = DefaultPerHostMinute
	}
	if l.HistoryRuns == 0 {
		l.HistoryRuns = DefaultHistoryRuns
	}
	if l.MaxItemsPerRun == 0 {
		l.MaxItemsPerRun = DefaultMaxItemsPerRun
	}
	if l.ConcurrentRuns == 0 {
		l.ConcurrentRuns = DefaultConcurrentRuns
	}
	if l.InboxItems == 0 {
		l.InboxItems = DefaultInboxItems
	}
	if l.StartSpread == 0 {
		l.StartSpread = Duration(DefaultStartSpread)
	}
	for name, h := range c.Inbound {
		if h.Format == "" {
			h.Format = DefaultInboundFormat
			c.Inbound[name] = h
		}
	}
	if c.Assistant.Timeout == 0 {
		c.Assistant.Timeout = Duration(DefaultAssistantTime)
	}
	if c.Assistant.MaxPerHour == 0 {
		c.Assistant.MaxPerHour = DefaultAssistantRate
	}
	c.History.applyDefaults()
	for i := range c.Tasks {
		if c.Tasks[i].Name == "" {
			c.Tasks[i].Name = c.Tasks[i].ID
		}
	}
}

// Task returns the declared task with id, if any.
func (c *Config) Task(id string) (TaskDecl, bool) {
	for _, t := range c.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	return TaskDecl{}, false
}

// RestartOnly names the settings that differ between old and new but
// take effect only when the process starts again: the listener, the
// store, and the chat channels' conversation side (deliveries through a
// channel use the new settings at once). A reload reports them so that a
// changed token or address is never silently ignored. Values are not
// part of the answer (they may be secrets).
func RestartOnly(old, new *Config) []string {
	var out []string
	if !old.Server.equal(new.Server) {
		out = append(out, "server")
	}
	if old.Store != new.Store {
		out = append(out, "store")
	}
	if old.Channels.Telegram != new.Channels.Telegram {
		out = append(out, "channels.telegram")
	}
	if old.Channels.Feishu != new.Channels.Feishu {
		out = append(out, "channels.feishu")
	}
	return out
}

// Browser is the headless Chromium that renders pages (render: browser).
type Browser struct {
	// Path is the browser executable; empty: chromium (or
	// chromium-browser, google-chrome) found on PATH.
	Path string `yaml:"path"`
	// MaxParallel bounds the pages rendered at once (default 2).
	MaxParallel int `yaml:"max_parallel"`
	// Timeout bounds one page, the browser's start included (default 20s).
	Timeout Duration `yaml:"timeout"`
	// MemoryMB bounds the resident memory of one page's browser (default 1024).
	MemoryMB int `yaml:"memory_mb"`
}

// Browser bounds.
const (
	MaxBrowserParallel = 16
	MaxBrowserTimeout  = 5 * time.Minute
	MinBrowserMemoryMB = 128
)
