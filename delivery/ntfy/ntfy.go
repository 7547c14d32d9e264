// Package ntfy is the delivery sink for ntfy topics (ntfy.sh or a
// self-hosted server): one JSON message per push, published to the
// server's root with the topic in the body, as plain text (never
// markdown) with the item's link as the notification's click action.
package ntfy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "ntfy"

// Limits of the server and of this sink.
const (
	// MaxMessage is the most UTF-8 bytes of a message ntfy shows as
	// text (its default message-size-limit); a longer one would arrive
	// as an attachment, so the text is cut to fit.
	MaxMessage = 4096
	// MaxBody is the most a JSON publish body may hold (twice the
	// message limit on the server).
	MaxBody = 2 * MaxMessage
	// MaxTitle is the most UTF-8 bytes of a title this sink sends.
	MaxTitle = 1024
	// DefaultTimeout bounds one attempt.
	DefaultTimeout = 10 * time.Second
	// Every and Burst pace one topic as the server paces a visitor by
	// default: 60 at once, then one every 5 s.
	Every = 5 * time.Second
	Burst = 60
	// RateLimitedWait is the wait after a 429 without a Retry-After
	// (ntfy sets none): two of the server's refill steps.
	RateLimitedWait = 2 * Every
	// QuotaWait is the wait after the server's daily message quota ran
	// out (or it counted too many failed logins).
	QuotaWait = time.Hour
	// maxAnswer caps how much of an answer is read.
	maxAnswer = 64 << 10
	// maxPaceWait is the longest a send waits for a token inside a
	// worker; a longer wait goes back to the ledger as retry_after.
	maxPaceWait = time.Second
)

// ErrBadURL is returned for a URL that does not name a topic.
var ErrBadURL = errors.New("ntfy: url must be an http(s) topic url: https://<server>/<topic>")

// ntfy's error codes with a meaning of their own.
const (
	codeTopicInvalid = 40009
	codeDailyQuota   = 42908
	codeAuthFailures = 42909
)

// Target is the topic a sink publishes to, and how.
type Target struct {
	URL      string // https://<server>/<topic>
	Token    string // Bearer token, or
	Username string // Basic credentials
	Password string
	Priority int      // 1..5; 0: the server's default
	Tags     []string // ntfy tags
}

// Sink publishes deliveries to one ntfy topic.
type Sink struct {
	t       Target
	base    string // where the JSON message is POSTed
	topic   string
	auth    string // the Authorization header, if any
	secrets []string
	client  *http.Client
	egress  egress.Options
	buckets store.Buckets
	bucket  string
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

// WithBuckets paces the topic by a bucket in the store, shared by every
// replica (default: no pacing; the server's 429 is still waited out).
func WithBuckets(b store.Buckets) Option { return func(s *Sink) { s.buckets = b } }

// New returns a sink publishing to t. Its errors never carry the URL or
// a credential.
func New(t Target, opts ...Option) (*Sink, error) {
	base, topic, err := splitTopic(t.URL)
	if err != nil {
		return nil, err
	}
	s := &Sink{t: t, base: base, topic: topic, secrets: secrets(t.URL, t.Token, t.Password), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if err := egress.CheckURL(t.URL, s.egress.AllowPrivate); err != nil {
		return nil, err
	}
	switch {
	case t.Token != "":
		s.auth = "Bearer " + t.Token
	case t.Username != "":
		s.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(t.Username+":"+t.Password))
	}
	s.egress.Timeout = cmp.Or(s.egress.Timeout, DefaultTimeout)
	s.client = egress.Client(s.egress)
	sum := sha256.Sum256([]byte(t.URL))
	s.bucket = string(Kind) + ":" + hex.EncodeToString(sum[:16]) // never the URL: the topic is a secret
	return s, nil
}

// Publish is the JSON message the sink POSTs.
type Publish struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title,omitempty"`
	Message  string   `json:"message"`
	Click    string   `json:"click,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Priority int      `json:"priority,omitempty"`
}

// Compose renders d's message as the JSON message Send posts: the
// headline as the title, the rest as plain text cut to MaxMessage bytes
// (between lines where it can, never inside a link), the item's link as
// the click action, and the encoding within MaxBody.
func (s *Sink) Compose(d delivery.Delivery) ([]byte, error) {
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	title, text, link := render.Plain(d.Message, d.Lang, d.Zone, at)
	p := Publish{Topic: s.topic, Title: render.CutBytes(title, MaxTitle), Click: link, Tags: s.t.Tags, Priority: s.t.Priority}
	limit := MaxMessage
	for {
		p.Message = render.CutText(text, limit)
		b, err := encode(p)
		if err != nil || len(b) <= MaxBody || limit == 0 {
			return b, err
		}
		limit = max(limit-(len(b)-MaxBody), 0)
	}
}

func encode(p Publish) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Send publishes d's message once and classifies the answer:
//
//   - 200 with the published message: completed, its id the provider id.
//   - 429: retry_after (the daily quota: QuotaWait).
//   - 401, 403 (bad or missing credentials, no write access), an invalid
//     topic: failed, and the recipient unreachable.
//   - Other 4xx, a redirect: failed.
//   - 408, 5xx, an answer that is not a message, a timeout or a dropped
//     connection after the request went out: unknown. ntfy takes no key
//     to drop a repeated message by, so these are never sent again
//     automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	return robot.Send(s.log, Kind, "ntfy", s.secrets, d, 1, func() (delivery.Outcome, error) { return s.send(ctx, d) })
}

func (s *Sink) send(ctx context.Context, d delivery.Delivery) (delivery.Outcome, error) {
	body, err := s.Compose(d)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	if out, ok := s.pace(ctx); !ok {
		return out, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base, bytes.NewReader(body))
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_url"}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return classifyTransport(err), err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		// The request was answered; only the answer was lost.
		return delivery.Outcome{Result: delivery.Unknown, Reason: delivery.ReasonConnLost}, err
	}
	return Classify(resp.StatusCode, resp.Header.Get("Retry-After"), raw, s.now()), nil
}

// classifyTransport classifies a failed round trip. A destination the
// guard refused is final: nothing was sent, and nothing will be until the
// configuration changes.
func classifyTransport(err error) delivery.Outcome {
	if errors.Is(err, egress.ErrBlocked) || errors.Is(err, egress.ErrBadURL) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "blocked_destination"}
	}
	return delivery.ClassifyTransport(err)
}

// answer is what ntfy answers: the published message, or an error.
type answer struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Code  int    `json:"code"`
}

// Classify maps an answer of an ntfy server to an outcome.
func Classify(status int, retryAfter string, raw []byte, now time.Time) delivery.Outcome {
	var a answer
	_ = json.Unmarshal(raw, &a)
	reason := "http_" + strconv.Itoa(status)
	if a.Code != 0 {
		reason = "code_" + strconv.Itoa(a.Code)
	}
	switch {
	case status == http.StatusOK && a.Event == "message" && a.ID != "":
		return delivery.Outcome{Result: delivery.Completed, ProviderID: a.ID}
	case status == http.StatusOK:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case status == http.StatusTooManyRequests && a.Code == codeDailyQuota:
		return delivery.Outcome{Result: delivery.RetryAfter, After: max(parseRetryAfter(retryAfter, now), QuotaWait), Reason: "daily_quota"}
	case status == http.StatusTooManyRequests && a.Code == codeAuthFailures:
		return delivery.Outcome{Result: delivery.RetryAfter, After: max(parseRetryAfter(retryAfter, now), QuotaWait), Reason: "auth_failures"}
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: cmp.Or(parseRetryAfter(retryAfter, now), RateLimitedWait), Reason: "rate_limited"}
	case status == http.StatusUnauthorized:
		return delivery.Outcome{Result: delivery.Failed, Reason: "unauthorized", Unreachable: true}
	case status == http.StatusForbidden:
		return delivery.Outcome{Result: delivery.Failed, Reason: "forbidden", Unreachable: true}
	case a.Code == codeTopicInvalid:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_topic", Unreachable: true}
	case status == http.StatusRequestTimeout || status >= 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: reason}
	case status >= 300 && status < 400:
		return delivery.Outcome{Result: delivery.Failed, Reason: "redirect"}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: reason}
}

// parseRetryAfter reads a Retry-After value (seconds or an HTTP date);
// zero when there is none or it is unusable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// pace takes a token of the topic's bucket, waiting up to a second for
// one. When it returns false, nothing was sent and out says when to try
// again.
func (s *Sink) pace(ctx context.Context) (out delivery.Outcome, ok bool) {
	if s.buckets == nil {
		return delivery.Outcome{}, true
	}
	for try := 0; ; try++ {
		wait, err := s.buckets.Take(ctx, s.bucket, Every, Burst, s.now())
		switch {
		case err != nil:
			return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: "store_unavailable"}, false
		case wait == 0:
			return delivery.Outcome{}, true
		case wait > maxPaceWait || try > 0:
			return delivery.Outcome{Result: delivery.RetryAfter, After: max(wait, time.Second), Reason: "paced"}, false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return delivery.Outcome{Result: delivery.RetryAfter, After: time.Second, Reason: delivery.ReasonCanceled}, false
		}
	}
}
