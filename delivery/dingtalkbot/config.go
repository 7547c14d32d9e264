package dingtalkbot

import (
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Config is a DingTalk custom group robot
// (recipients.<name>.dingtalk_bot). Its URL carries the access token in
// the query; the signing secret is optional (the robot's "sign" security setting).
// Both are secrets.
type Config struct {
	URL    string `yaml:"url"` // https://oapi.dingtalk.com/robot/send?access_token=…
	Secret string `yaml:"secret"`

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
		if u, err := url.Parse(c.URL); err == nil {
			q := u.Query()
			switch {
			case q.Get("access_token") == "":
				ck.Errorf("url", "must carry the robot's access token: …/robot/send?access_token=<token>")
			case q.Has("timestamp") || q.Has("sign"):
				ck.Errorf("url", "must not carry timestamp or sign: herald signs each send with the secret")
			}
		}
	}
	if c.Secret != "" && !ck.Unset("secret") && !strings.HasPrefix(c.Secret, "SEC") {
		ck.Errorf("secret", "must be the robot's signing secret, which starts with SEC")
	}
}

// NewSink implements delivery.SinkConfig.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	return New(c.URL, c.Secret, robot.FromDeps(deps)...)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return robot.Secrets(c.URL, c.Secret) }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
