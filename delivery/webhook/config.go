package webhook

import (
	"time"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
)

// MaxTimeout is the longest a recipient may let one attempt take.
const MaxTimeout = 2 * time.Minute

// The retry schedule's defaults and bounds (SPEC §21).
const (
	// MaxRetries bounds the length of a retry schedule.
	MaxRetries = 20
	// MaxRetryWait bounds one wait of a retry schedule.
	MaxRetryWait = 7 * 24 * time.Hour
	// DefaultDisableAfter is how long a recipient may fail without a
	// success before it is disabled.
	DefaultDisableAfter = 5 * 24 * time.Hour
)

// DefaultSchedule is the wait before each retry of an idempotent
// recipient's failed attempt: nine retries over about three days, after
// the Standard Webhooks example.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// Config is an outbound Standard Webhooks recipient
// (recipients.<name>.webhook).
type Config struct {
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"` // whsec_<base64>
	// Idempotent declares that the receiver drops a repeated webhook-id,
	// as Standard Webhooks receivers do (unset: true). It is what lets a
	// failed attempt be retried on RetrySchedule (SPEC §21, I3); false
	// sends each push at most once when it may have arrived.
	Idempotent *bool `yaml:"idempotent"`
	// RetrySchedule is the wait before each retry of an idempotent
	// recipient's failed attempt (unset: DefaultSchedule).
	RetrySchedule []section.Duration `yaml:"retry_schedule"`
	// DisableAfter disables the recipient after failing for this long
	// without a success (unset: DefaultDisableAfter; 0s: never).
	DisableAfter *section.Duration `yaml:"disable_after"`
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
	if !ck.Bad("retry_schedule") {
		if len(c.RetrySchedule) > MaxRetries {
			ck.Errorf("retry_schedule", "at most %d retries", MaxRetries)
		}
		for _, w := range c.RetrySchedule {
			if w.D() <= 0 || w.D() > MaxRetryWait {
				ck.Errorf("retry_schedule", "each wait must be more than 0s and at most %s", MaxRetryWait)
				break
			}
		}
	}
	if c.DisableAfter != nil && !ck.Bad("disable_after") && c.DisableAfter.D() < 0 {
		ck.Errorf("disable_after", "must be a duration of 0s (never) or more")
	}
}

// Policy is the retry schedule and disable policy c declares, with the
// defaults for what it leaves unset. A recipient that is not idempotent
// gets no schedule.
func (c *Config) Policy() delivery.RetryPolicy {
	p := delivery.RetryPolicy{DisableAfter: DefaultDisableAfter}
	if c.DisableAfter != nil {
		p.DisableAfter = c.DisableAfter.D()
	}
	if c.Idempotent != nil && !*c.Idempotent {
		return p
	}
	p.Schedule = DefaultSchedule
	if c.RetrySchedule != nil {
		p.Schedule = make([]time.Duration, len(c.RetrySchedule))
		for i, w := range c.RetrySchedule {
			p.Schedule[i] = w.D()
		}
	}
	return p
}

// NewSink implements delivery.SinkConfig; a zero Timeout is DefaultTimeout.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	eg := deps.Egress
	eg.Timeout = c.Timeout.D()
	p := c.Policy()
	s, err := New(deps.Name, c.URL, c.Secret, p.Schedule != nil, eg)
	if err != nil {
		return nil, err
	}
	return s.WithPolicy(p), nil
}

// Secrets implements delivery.SinkConfig.
func (c *Config) Secrets() []string { return []string{c.URL, c.Secret} }

// Endpoint implements delivery.Endpointer: the URL pushes go to.
func (c *Config) Endpoint() string { return c.URL }
