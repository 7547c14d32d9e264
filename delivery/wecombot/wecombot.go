// Package wecombot is the delivery sink for WeCom (企业微信) group robots:
// a markdown message POSTed to the robot's hook URL, split by UTF-8 bytes
// within the platform's limit, paced to the robot's 20 messages a minute
// across replicas, each answer's errcode classified.
package wecombot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "wecom_bot"

// MaxContent is the most UTF-8 bytes one markdown message may hold.
const MaxContent = 4096

// codes are the errcodes with a meaning of their own; any other non-zero
// errcode fails the push.
var codes = map[int]robot.Code{
	45009: {Reason: "rate_limited", TooFast: true},  // api freq out of limit
	93000: {Reason: "bad_key", BadCredential: true}, // invalid webhook url: wrong key, or the robot was removed
	40008: {Reason: "bad_key", BadCredential: true},
}

// ErrBadHook is returned by New for a hook URL that is not http(s).
var ErrBadHook = errors.New("wecombot: hook url must be an http(s) url")

// Sink posts deliveries to one WeCom group robot.
type Sink struct {
	hook    string
	secrets []string
	client  *http.Client
	egress  egress.Options
	buckets store.Buckets
	pace    *robot.Pacer
	log     zerolog.Logger
	now     func() time.Time
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a Sink.
type Option func(*Sink)

// WithEgress sets the options of the guarded egress client (default:
// public destinations only, no redirects, robot.DefaultTimeout).
func WithEgress(o egress.Options) Option { return func(s *Sink) { s.egress = o } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(s *Sink) { s.log = l } }

// WithClock sets the clock for pacing and relative times.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithBuckets paces the robot by a bucket in the store (default: no
// pacing; the robot's too-fast answer is still retried).
func WithBuckets(b store.Buckets) Option { return func(s *Sink) { s.buckets = b } }

// New returns a sink posting to hookURL.
func New(hookURL string, opts ...Option) (*Sink, error) {
	u, err := url.Parse(hookURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrBadHook
	}
	s := &Sink{hook: hookURL, secrets: robot.Secrets(hookURL), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.egress.Timeout <= 0 {
		s.egress.Timeout = robot.DefaultTimeout
	}
	s.client = egress.Client(s.egress)
	if s.buckets != nil {
		s.pace = robot.NewPacer(s.buckets, Kind, hookURL, s.now)
	}
	return s, nil
}

// Parts renders d's message as the markdown parts Send posts.
func (s *Sink) Parts(d delivery.Delivery) []string {
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	return render.Markdown(d.Message, d.Lang, d.Zone, at, render.MarkdownStyle{Limit: MaxContent, Break: "\n"})
}

type request struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Content string `json:"content"`
	} `json:"markdown"`
}

// Send posts part d.Part of d.Message. A timeout or a dropped connection
// after the request went out is unknown: the robot has no idempotency
// key, so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	if d.To.Kind != Kind {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}
	}
	parts := s.Parts(d)
	if d.Part < 0 || d.Part >= len(parts) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part", Parts: len(parts)}
	}
	out, err := s.send(ctx, parts[d.Part])
	out.Parts = len(parts)
	ev := s.log.Debug()
	if out.Result != delivery.Completed {
		ev = s.log.Warn()
	}
	if err != nil {
		ev = ev.Str("error", robot.Redact(err, s.secrets))
	}
	ev.Str("recipient_kind", string(Kind)).Str("recipient", d.To.Redacted()).Int("part", d.Part).Int("parts", len(parts)).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg("wecom robot send")
	return out
}

func (s *Sink) send(ctx context.Context, content string) (delivery.Outcome, error) {
	var req request
	req.MsgType = "markdown"
	req.Markdown.Content = content
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	if out, ok := s.pace.Wait(ctx); !ok {
		return out, nil
	}
	return robot.Post(ctx, s.client, s.hook, body.Bytes(), codes)
}
