// Package discord is the delivery sink for Discord webhooks: the message
// as escaped markdown content POSTed to the webhook with every mention
// suppressed, split within Discord's 2000 characters, paced per webhook
// across replicas (configurable) and by the rate-limit bucket Discord
// reports, each answer classified; ?wait=true makes Discord answer with
// the message it posted, whose id is kept. The token in the webhook's URL
// never reaches logs, errors or metrics.
package discord

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
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "discord"

const (
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
	// DefaultEvery and DefaultBurst pace one webhook: five at once, then
	// one every two seconds.
	DefaultEvery = 2 * time.Second
	DefaultBurst = 5
	// DefaultRetryAfter is the wait after a 429 without a usable retry_after.
	DefaultRetryAfter = 30 * time.Second
	// maxHold caps how long an exhausted bucket Discord reports holds the
	// webhook.
	maxHold = time.Hour
)

// ErrBadURL is returned for a webhook URL that is not http(s).
var ErrBadURL = errors.New("discord: webhook url must be an http(s) url")

// Sink posts deliveries to one Discord webhook.
type Sink struct {
	hook    string // with wait=true
	mu      sync.Mutex
	until   time.Time // Discord said the bucket is empty until then
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
// replica (default: no pacing; Discord's buckets and 429 are still
// honoured).
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
	q := u.Query()
	q.Set("wait", "true")
	u.RawQuery = q.Encode()
	s := &Sink{hook: u.String(), secrets: append(robot.PathSecrets(hook), u.String()), log: zerolog.Nop(), now: time.Now}
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
	return robot.Send(s.log, Kind, "discord", s.secrets, d, len(parts), func() (delivery.Outcome, error) {
		return s.send(ctx, parts[d.Part])
	})
}

func (s *Sink) send(ctx context.Context, text string) (delivery.Outcome, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	var req request
	req.Content = text
	req.AllowedMentions.Parse = []string{}
	if err := enc.Encode(req); err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	if out, ok := s.held(); !ok {
		return out, nil
	}
	if out, ok := s.pacer.Wait(ctx); !ok {
		return out, nil
	}
	return robot.Exchange(ctx, s.client, s.hook, body.Bytes(), "bad_url", func(status int, h http.Header, raw []byte) delivery.Outcome {
		s.hold(h)
		return Classify(status, h, raw, s.now())
	})
}

type request struct {
	Content         string `json:"content"`
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
}

// hold remembers an empty bucket Discord reports (X-RateLimit-Remaining
// 0), so the next send waits X-RateLimit-Reset-After instead of earning
// a 429.
func (s *Sink) hold(h http.Header) {
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) != "0" {
		return
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(h.Get("X-RateLimit-Reset-After")), 64)
	if err != nil || secs <= 0 {
		return
	}
	d := min(time.Duration(secs*float64(time.Second)), maxHold)
	s.mu.Lock()
	s.until = s.now().Add(d)
	s.mu.Unlock()
}

// held says whether the webhook's bucket is still empty; then nothing is
// sent and out says when to try again.
func (s *Sink) held() (out delivery.Outcome, ok bool) {
	s.mu.Lock()
	until := s.until
	s.mu.Unlock()
	if wait := until.Sub(s.now()); wait > 0 {
		return delivery.Outcome{Result: delivery.RetryAfter, After: max(ceilSecond(wait), time.Second), Reason: "paced"}, false
	}
	return delivery.Outcome{}, true
}

// codes are Discord's JSON error codes herald names in reasons.
var codes = map[int]string{
	10015:  "unknown_webhook",
	50027:  "invalid_webhook_token",
	50006:  "empty_message",
	50035:  "invalid_form_body",
	40005:  "entity_too_large",
	220001: "thread_required",
}

// Classify maps a webhook's answer to an outcome. A 2xx is completed,
// keeping the posted message's id (wait=true). 429 waits the longer of
// the body's retry_after and the Retry-After header. 401, 403 and 404 (a
// wrong token, a deleted webhook, a channel it may not post in) fail and
// mark the recipient unreachable. A 5xx may have posted the message:
// unknown. Reasons name Discord's error code, never its message.
func Classify(status int, h http.Header, raw []byte, now time.Time) delivery.Outcome {
	var a struct {
		ID         string   `json:"id"`
		Code       int      `json:"code"`
		RetryAfter *float64 `json:"retry_after"`
	}
	parsed := json.Unmarshal(raw, &a) == nil
	reason := "http_" + strconv.Itoa(status)
	if name, ok := codes[a.Code]; ok {
		reason = name
	} else if a.Code != 0 {
		reason = "code_" + strconv.Itoa(a.Code)
	}
	switch {
	case status >= 200 && status < 300:
		out := delivery.Outcome{Result: delivery.Completed}
		if parsed && snowflake(a.ID) {
			out.ProviderID = a.ID
		}
		return out
	case status == http.StatusTooManyRequests:
		wait := time.Duration(0)
		if h.Get("Retry-After") != "" {
			wait = RetryAfter(h.Get("Retry-After"), now)
		}
		if a.RetryAfter != nil && *a.RetryAfter >= 0 && *a.RetryAfter < 86400 {
			wait = max(wait, ceilSecond(time.Duration(*a.RetryAfter*float64(time.Second))))
		}
		if wait == 0 {
			wait = DefaultRetryAfter
		}
		return delivery.Outcome{Result: delivery.RetryAfter, After: max(wait, time.Second), Reason: "rate_limited"}
	case status >= 500 || status == http.StatusRequestTimeout:
		return delivery.Outcome{Result: delivery.Unknown, Reason: reason}
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusNotFound:
		return delivery.Outcome{Result: delivery.Failed, Reason: reason, Unreachable: true}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: reason}
}

// snowflake reports whether id reads as a Discord id (digits only).
func snowflake(id string) bool {
	if id == "" || len(id) > 20 {
		return false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ceilSecond rounds d up to a whole second.
func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		return d - r + time.Second
	}
	return d
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
		return max(ceilSecond(at.Sub(now)), time.Second)
	}
	return DefaultRetryAfter
}
