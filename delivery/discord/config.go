package discord

import (
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Pacing limits a recipient may set.
const (
	// MaxEvery is the longest pause between messages a recipient may ask for.
	MaxEvery = time.Hour
	// MaxBurst is the most messages a recipient may let go at once.
	MaxBurst = 100
)

// Config is a Discord webhook (recipients.<name>.discord). The token in
// the URL's path is a secret: anyone holding it can post to the channel.
type Config struct {
	URL string `yaml:"url"` // https://discord.com/api/webhooks/<id>/<token>
	// Every is the least pause between two messages to the webhook,
	// shared by every replica (default 2s).
	Every section.Duration `yaml:"every"`
	// Burst is how many messages may go at once before Every applies
	// (default 5).
	Burst int `yaml:"burst"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	ck.RequiredURL("url", c.URL)
	if c.URL != "" && !ck.Unset("url") && !ck.Bad("url") {
		if u, err := url.Parse(c.URL); err == nil && strings.Trim(u.Path, "/") == "" {
			ck.Errorf("url", "must be the webhook's whole URL: https://discord.com/api/webhooks/<id>/<token>")
		}
	}
	if e := c.Every.D(); !ck.Bad("every") && (e < 0 || e > MaxEvery) {
		ck.Errorf("every", "must be a duration of at most %s (unset: %s)", MaxEvery, DefaultEvery)
	}
	if c.Burst < 0 || c.Burst > MaxBurst {
		ck.Errorf("burst", "must be between 1 and %d (unset: %d)", MaxBurst, DefaultBurst)
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	opts := []Option{WithEgress(deps.Egress), WithLogger(deps.Log), WithPace(c.Every.D(), c.Burst)}
	if deps.Store != nil {
		opts = append(opts, WithBuckets(deps.Store.Buckets()))
	}
	return New(c.URL, opts...)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return robot.PathSecrets(c.URL) }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
