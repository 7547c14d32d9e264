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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
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
	// maxPaceWait is the longest a send waits for a token inside a
	// worker; a longer wait goes back to the ledger as retry_after.
	maxPaceWait = time.Second
	// maxAnswer caps how much of an answer is read.
	maxAnswer = 64 << 10
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
	s := &Sink{hook: hook, secrets: secrets(hook), log: zerolog.Nop(), now: time.Now}
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
	sum := sha256.Sum256([]byte(hook)) // never the URL: it is the credential
	s.bucket = string(Kind) + ":" + hex.EncodeToString(sum[:16])
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
		ev = ev.Str("error", delivery.Redact(egress.Redact(err).Error(), s.secrets))
	}
	ev.Str("recipient_kind", string(Kind)).Str("recipient", d.To.Redacted()).Int("part", d.Part).Int("parts", len(parts)).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg("slack send")
	return out
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
	if out, ok := s.pace(ctx); !ok {
		return out, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.hook, &body)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_url"}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrBlocked) || errors.Is(err, egress.ErrBadURL) {
			return delivery.Outcome{Result: delivery.Failed, Reason: "blocked_destination"}, err
		}
		return delivery.ClassifyTransport(err), err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		// The request was answered; only the answer was lost.
		return delivery.Outcome{Result: delivery.Unknown, Reason: delivery.ReasonConnLost}, err
	}
	return Classify(resp.StatusCode, resp.Header, raw, s.now()), nil
}

// pace takes a token from the webhook's bucket, waiting up to a second
// for one. When it returns false, nothing was sent and out says when to
// try again.
func (s *Sink) pace(ctx context.Context) (out delivery.Outcome, ok bool) {
	if s.buckets == nil {
		return delivery.Outcome{}, true
	}
	for try := 0; ; try++ {
		wait, err := s.buckets.Take(ctx, s.bucket, s.every, s.burst, s.now())
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
