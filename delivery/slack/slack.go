// Package slack is the delivery sink for Slack incoming webhooks: the
// message as escaped mrkdwn text POSTed to the webhook's URL, split
// within Slack's text limit, paced to one message a second per webhook
// across replicas (configurable), and each plain-text answer classified.
// The webhook URL is the credential: it never reaches logs, errors or
// metrics.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "slack"

const (
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
	// DefaultEvery and DefaultBurst pace one webhook to a message a second.
	DefaultEvery = time.Second
	DefaultBurst = 1
	// DefaultRetryAfter is the wait after a 429 without a usable Retry-After.
	DefaultRetryAfter = 30 * time.Second
)

// ErrBadURL is returned for a webhook URL that is not http(s).
var ErrBadURL = errors.New("slack: webhook url must be an http(s) url")

// Sink posts deliveries to one Slack incoming webhook.
type Sink struct {
	hook    string
	secrets []string
	client  *http.Client
	egress  egress.Options
	buckets store.Buckets
	every   time.Duration
	burst   int
	pacer   *robot.Pacer
	log     zerolog.Logger
	now     func() time.Time
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a Sink.
type Option func(*Sink)

// WithEgress sets the options of the guarded egress client (default:
// public destinations only, no redirects, DefaultTimeout).
func WithEgress(o egress.Options) Option { return func(s *Sink) { s.egress = o } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(s *Sink) { s.log = l } }

// WithClock sets the clock for pacing and relative times.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithBuckets paces the webhook by a bucket in the store, shared by every
// replica (default: no pacing; Slack's 429 is still honoured).
func WithBuckets(b store.Buckets) Option { return func(s *Sink) { s.buckets = b } }

// WithPace sets the pacing: burst messages at once, then one every
// `every` (zero or less: DefaultEvery, DefaultBurst).
func WithPace(every time.Duration, burst int) Option {
	return func(s *Sink) { s.every, s.burst = every, burst }
}

// New returns a sink posting to the webhook at hook.
func New(hook string, opts ...Option) (*Sink, error) {
	u, err := url.Parse(hook)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrBadURL
	}
	s := &Sink{hook: hook, secrets: robot.PathSecrets(hook), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.egress.Timeout <= 0 {
		s.egress.Timeout = DefaultTimeout
	}
	s.client = egress.Client(s.egress)
	if s.every <= 0 {
		s.every = DefaultEvery
	}
	if s.burst < 1 {
		s.burst = DefaultBurst
	}
	if s.buckets != nil { // the bucket is named by a hash of hook, never the URL: it is the credential
		s.pacer = robot.NewPacerRate(s.buckets, Kind, hook, s.now, s.every, s.burst)
	}
	return s, nil
}

// Parts renders d's message as the texts Send posts, one per part.
func (s *Sink) Parts(d delivery.Delivery) []string {
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	return Render(d.Message, d.Lang, d.Zone, at)
}

// Send posts part d.Part of d.Message. A timeout or a dropped connection
// after the request went out is unknown: the webhook takes no
// idempotency key, so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	parts := s.Parts(d)
	return robot.Send(s.log, Kind, "slack", s.secrets, d, len(parts), func() (delivery.Outcome, error) {
		return s.send(ctx, parts[d.Part])
	})
}

func (s *Sink) send(ctx context.Context, text string) (delivery.Outcome, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Text string `json:"text"`
	}{text}); err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	if out, ok := s.pacer.Wait(ctx); !ok {
		return out, nil
	}
	return robot.Exchange(ctx, s.client, s.hook, body.Bytes(), "bad_url", func(status int, h http.Header, raw []byte) delivery.Outcome {
		return Classify(status, h, raw, s.now())
	})
}

// answer is what one of Slack's plain-text error answers means.
type answer struct {
	result      delivery.Result
	unreachable bool
}

// answers are Slack's error strings with a meaning of their own. The
// webhook, channel or workspace is gone or refuses the app: failed, and
// the recipient unreachable until the config changes. A payload Slack
// will not take: failed. rollup_error is Slack's own failure: the message
// may have been posted.
var answers = map[string]answer{
	"no_service":                        {delivery.Failed, true},
	"no_service_id":                     {delivery.Failed, true},
	"no_team":                           {delivery.Failed, true},
	"team_disabled":                     {delivery.Failed, true},
	"invalid_token":                     {delivery.Failed, true},
	"no_active_hooks":                   {delivery.Failed, true},
	"channel_not_found":                 {delivery.Failed, true},
	"channel_is_archived":               {delivery.Failed, true},
	"action_prohibited":                 {delivery.Failed, true},
	"user_not_found":                    {delivery.Failed, true},
	"posting_to_general_channel_denied": {delivery.Failed, true},
	"invalid_payload":                   {delivery.Failed, false},
	"no_text":                           {delivery.Failed, false},
	"too_many_attachments":              {delivery.Failed, false},
	"invalid_blocks":                    {delivery.Failed, false},
	"rollup_error":                      {delivery.Unknown, false},
}

// Classify maps a webhook's answer to an outcome. Only HTTP 200 with the
// body "ok" is completed; a 200 saying anything else is read, never taken
// for success. 429 waits Retry-After. 401, 403, 404 and 410 (the webhook
// or channel is gone or refused) fail and mark the recipient unreachable.
// A 5xx may have posted the message: unknown. Reasons are Slack's own
// error strings when known, else the status; never the body itself.
func Classify(status int, h http.Header, raw []byte, now time.Time) delivery.Outcome {
	body := strings.TrimSpace(string(raw))
	a, known := answers[body]
	switch {
	case status == http.StatusOK && body == "ok":
		return delivery.Outcome{Result: delivery.Completed}
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: RetryAfter(h.Get("Retry-After"), now), Reason: "rate_limited"}
	case known:
		return delivery.Outcome{Result: a.result, Reason: body, Unreachable: a.unreachable}
	case status == http.StatusOK:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case status >= 500 || status == http.StatusRequestTimeout:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status), Unreachable: true}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
}

// RetryAfter parses a Retry-After header value: delay seconds or an HTTP
// date, rounded up to a whole second; DefaultRetryAfter when missing or
// unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 && secs < 86400 {
		return max(time.Duration(math.Ceil(secs))*time.Second, time.Second)
	}
	if at, err := http.ParseTime(v); err == nil {
		d := at.Sub(now)
		if r := d % time.Second; r > 0 {
			d += time.Second - r
		}
		return max(d, time.Second)
	}
	return DefaultRetryAfter
}
