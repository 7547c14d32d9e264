package wecombot

import (
	"net/url"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Config is a WeCom group robot (recipients.<name>.wecom_bot). Its URL
// carries the robot's key in the query: a secret.
type Config struct {
	URL string `yaml:"url"` // https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	ck.RequiredURL("url", c.URL)
	if c.URL == "" || ck.Unset("url") || ck.Bad("url") {
		return
	}
	if u, err := url.Parse(c.URL); err == nil && u.Query().Get("key") == "" {
		ck.Errorf("url", "must carry the robot's key: …/cgi-bin/webhook/send?key=<key>")
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	return New(c.URL, robot.FromDeps(deps)...)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return robot.Secrets(c.URL) }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
