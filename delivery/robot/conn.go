package robot

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store"
)

// ErrBadHook is returned for a hook URL that is not http(s).
var ErrBadHook = errors.New("robot: hook url must be an http(s) url")

// Conn is what a robot sink holds of its one robot: the hook URL, the
// guarded client, the pacer, the logger and clock, and the secrets its
// log lines must never show. Each sink keeps its rendering, signing and
// answer codes.
type Conn struct {
	kind    delivery.AddressKind
	name    string
	hook    string
	secrets []string
	client  *http.Client
	egress  egress.Options
	buckets store.Buckets
	pace    *Pacer
	log     zerolog.Logger
	now     func() time.Time
}

// Option configures a Conn.
type Option func(*Conn)

// WithHTTPClient replaces the HTTP client outright, bypassing the SSRF
// guard; WithEgress is the usual choice.
func WithHTTPClient(c *http.Client) Option { return func(cn *Conn) { cn.client = c } }

// WithEgress sets the options of the guarded egress client (default:
// public destinations only, no redirects, the sink's default timeout).
func WithEgress(o egress.Options) Option { return func(c *Conn) { c.egress = o } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(c *Conn) { c.log = l } }

// WithClock sets the clock for signing, pacing and relative times.
func WithClock(now func() time.Time) Option { return func(c *Conn) { c.now = now } }

// WithBuckets paces the robot by a bucket in the store (default: no
// pacing; the robot's too-fast answer is still retried).
func WithBuckets(b store.Buckets) Option { return func(c *Conn) { c.buckets = b } }

// FromDeps are the options a robot sink is built with from its config:
// the guarded egress client, the logger, and pacing by the store's
// buckets when there is a store.
func FromDeps(deps delivery.SinkDeps) []Option {
	opts := []Option{WithEgress(deps.Egress), WithLogger(deps.Log)}
	if deps.Store != nil {
		opts = append(opts, WithBuckets(deps.Store.Buckets()))
	}
	return opts
}

// Robot describes the robot a Conn reaches.
type Robot struct {
	Kind   delivery.AddressKind // the sink's kind, for logs and the pacing bucket
	Name   string               // the platform's name in log lines ("wecom robot")
	Hook   string               // the hook URL
	Secret string               // the signing secret, if any
	// Timeout bounds an attempt when WithEgress sets none (default
	// DefaultTimeout).
	Timeout time.Duration
}

// Dial checks r's hook URL and readies the connection to it.
func Dial(r Robot, opts ...Option) (*Conn, error) {
	u, err := url.Parse(r.Hook)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrBadHook
	}
	c := &Conn{kind: r.Kind, name: r.Name, hook: r.Hook, secrets: Secrets(r.Hook, r.Secret), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(c)
	}
	if c.client == nil {
		if c.egress.Timeout <= 0 {
			c.egress.Timeout = cmp.Or(r.Timeout, DefaultTimeout)
		}
		c.client = egress.Client(c.egress)
	}
	if c.buckets != nil {
		c.pace = NewPacer(c.buckets, r.Kind, r.Hook, c.now)
	}
	return c, nil
}

// Hook is the robot's hook URL.
func (c *Conn) Hook() string { return c.hook }

// Now is the connection's clock.
func (c *Conn) Now() time.Time { return c.now() }

// At is the instant d's message renders relative to: when it happened,
// or now.
func (c *Conn) At(d delivery.Delivery) time.Time {
	if at := d.Message.OccurredAt; !at.IsZero() {
		return at
	}
	return c.now()
}

// Post waits for the pacer, then sends body to the URL hook returns
// (called after pacing, so a signature's timestamp is the send's own) and
// classifies the answer with classify.
func (c *Conn) Post(ctx context.Context, body []byte, hook func() string, classify func(status int, raw []byte) delivery.Outcome) (delivery.Outcome, error) {
	if out, ok := c.pace.Wait(ctx); !ok {
		return out, nil
	}
	return post(ctx, c.client, hook(), body, classify)
}

// Send is the frame of a robot's Send: d must be addressed to the
// robot's kind and name one of n parts; send posts that part. The outcome
// is logged without the robot's secrets (I10).
func (c *Conn) Send(d delivery.Delivery, n int, send func() (delivery.Outcome, error)) delivery.Outcome {
	return Send(c.log, c.kind, c.name, c.secrets, d, n, send)
}

// Send is the frame of a hook sink's Send: d must be addressed to kind
// and name one of n parts; send posts that part. The outcome is logged
// as "<name> send" without any of secrets (I10).
func Send(log zerolog.Logger, kind delivery.AddressKind, name string, secrets []string, d delivery.Delivery, n int, send func() (delivery.Outcome, error)) delivery.Outcome {
	if d.To.Kind != kind {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}
	}
	if d.Part < 0 || d.Part >= n {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part", Parts: n}
	}
	out, err := send()
	out.Parts = n
	ev := log.Debug()
	if out.Result != delivery.Completed {
		ev = log.Warn()
	}
	if err != nil {
		ev = ev.Str("error", Redact(err, secrets))
	}
	ev.Str("recipient_kind", string(kind)).Str("recipient", d.To.Redacted()).Int("part", d.Part).Int("parts", n).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg(name + " send")
	return out
}
