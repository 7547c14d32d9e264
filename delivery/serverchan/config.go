package serverchan

import (
	"strings"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// MaxDailyLimit is the largest daily_limit accepted.
const MaxDailyLimit = 10000

// Config is a ServerChan send key (recipients.<name>.serverchan). The key
// is a secret, and so is every URL that carries it.
type Config struct {
	SendKey string `yaml:"sendkey"`
	// BaseURL replaces the service's endpoint: a self-hosted gateway or a
	// proxy in front of ServerChan. Messages go to <base_url>/<sendkey>.send,
	// or <base_url>/send/<sendkey>.send for a ServerChan³ key (sctp…).
	BaseURL string `yaml:"base_url"`
	// DailyLimit is how many messages a day herald sends with this key
	// (unset: DefaultDailyLimit); set it to the plan's quota. The day
	// starts at midnight UTC+8.
	DailyLimit int `yaml:"daily_limit"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	switch {
	case ck.Unset("sendkey"):
	case c.SendKey == "":
		ck.Errorf("", "sendkey is required")
	case !keyPattern.MatchString(c.SendKey):
		ck.Errorf("sendkey", "must be the key as the service shows it: letters and digits")
	case strings.HasPrefix(c.SendKey, "sctp") && !sc3Pattern.MatchString(c.SendKey):
		ck.Errorf("sendkey", "a ServerChan³ key is sctp<uid>t…")
	}
	if c.BaseURL != "" {
		ck.RequiredURL("base_url", c.BaseURL)
	}
	if !ck.Bad("daily_limit") && (c.DailyLimit < 0 || c.DailyLimit > MaxDailyLimit) {
		ck.Errorf("daily_limit", "must be between 1 and %d (unset: %d)", MaxDailyLimit, DefaultDailyLimit)
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	opts := fromDeps(deps)
	if c.BaseURL != "" {
		opts = append(opts, WithBaseURL(c.BaseURL))
	}
	if c.DailyLimit != 0 {
		opts = append(opts, WithDailyLimit(c.DailyLimit))
	}
	return New(c.SendKey, opts...)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return []string{c.SendKey} }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string {
	u, _ := Endpoint(c.BaseURL, c.SendKey)
	return u
}
