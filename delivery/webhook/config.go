package webhook

import (
	"time"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// MaxTimeout is the longest a recipient may let one attempt take.
const MaxTimeout = 2 * time.Minute

// Config is an outbound Standard Webhooks recipient
// (recipients.<name>.webhook).
type Config struct {
	URL        string `yaml:"url"`
	Secret     string `yaml:"secret"` // whsec_<base64>
	Idempotent bool   `yaml:"idempotent"`
	// Timeout bounds one attempt, from dial to the end of the answer
	// (default 10s, at most MaxTimeout). An attempt that times out
	// after sending may have arrived: it ends unknown.
	Timeout section.Duration `yaml:"timeout"`

	// proxy: the route its pushes take (SPEC §17).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return delivery.Webhook }

// Check implements delivery.SinkConfig.
func (c *Config) Check(ck section.Checker) {
	ck.RequiredURL("url", c.URL)
	switch {
	case ck.Unset("secret"):
	case c.Secret == "":
		ck.Errorf("secret", "a whsec_<base64> secret is required")
	default:
		if p := section.WhsecProblem(c.Secret); p != "" {
			ck.Errorf("secret", "%s", p)
		}
	}
	if t := c.Timeout.D(); !ck.Bad("timeout") && (t < 0 || t > MaxTimeout) {
		ck.Errorf("timeout", "must be a duration of at most %s (unset: 10s)", MaxTimeout)
	}
}

// NewSink implements delivery.SinkConfig; a zero Timeout is DefaultTimeout.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	eg := deps.Egress
	eg.Timeout = c.Timeout.D()
	return New(deps.Name, c.URL, c.Secret, c.Idempotent, eg)
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return []string{c.URL, c.Secret} }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
