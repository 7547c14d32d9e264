package feishubot

import (
	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Config is a Feishu custom group bot (recipients.<name>.feishu_bot). Its
// URL holds a token.
type Config struct {
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"` // signing secret; optional

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return delivery.FeishuBot }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) { ck.RequiredURL("url", c.URL) }

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	return New(c.URL, c.Secret, robot.WithHTTPClient(egress.Client(deps.Egress)), robot.WithLogger(deps.Log))
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return []string{c.URL, c.Secret} }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
