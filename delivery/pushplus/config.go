package pushplus

import (
	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// MaxDailyLimit is the largest daily_limit accepted (a member account's
// quota).
const MaxDailyLimit = 1000

// Config is a PushPlus account, or one of its groups
// (recipients.<name>.pushplus). The token is a secret.
type Config struct {
	Token string `yaml:"token"`
	Topic string `yaml:"topic"` // a group's code; unset: the token's owner
	// BaseURL replaces DefaultBaseURL: a self-hosted gateway or a proxy
	// in front of PushPlus. Messages go to <base_url>/send.
	BaseURL string `yaml:"base_url"`
	// DailyLimit is how many messages a day herald sends this account
	// (unset: DefaultDailyLimit); the day starts at midnight UTC+8.
	DailyLimit int `yaml:"daily_limit"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	if !ck.Unset("token") && c.Token == "" {
		ck.Errorf("", "token is required")
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
	return New(c.Token, append(opts, WithTopic(c.Topic))...)
}

// Secrets implements delivery.SinkConfig: the token, and the topic,
// which names the recipients.
func (c *Config) Secrets() []string { return []string{c.Token, c.Topic} }

// Endpoint implements delivery.Endpointer: the gateway pushes go to.
func (c *Config) Endpoint() string {
	if c.BaseURL != "" {
		return c.BaseURL
	}
	return DefaultBaseURL
}
