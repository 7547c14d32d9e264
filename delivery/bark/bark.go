// Package bark is the delivery sink for Bark, the iOS push app, through
// its bark-server (api.day.app or self-hosted): one JSON push per
// delivery to the server's /push route with the device key in the body,
// as plain text with the item's link as the notification's URL, the code
// inside every answer read.
package bark

import (
	"bytes"
	"cmp"
	"context"
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
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "bark"

// Limits of the push and of this sink.
const (
	// MaxPayload is the most bytes of the APNs payload bark-server
	// builds; the title, body, link and group it carries must fit in it.
	MaxPayload = 4096
	// payloadOverhead is kept free for the rest of that payload (the
	// aps keys, sound, category, the group again as the thread).
	payloadOverhead = 512
	// MaxTitle is the most UTF-8 bytes of a title this sink sends.
	MaxTitle = 256
	// DefaultTimeout bounds one attempt.
	DefaultTimeout = 10 * time.Second
	// RateLimitedWait is the wait after a 429 without a Retry-After, or
	// after Apple said too many pushes to the device.
	RateLimitedWait = time.Minute
	// UnavailableWait is the wait after Apple's push service refused
	// for being down: nothing was delivered.
	UnavailableWait = time.Minute
	// maxAnswer caps how much of an answer is read.
	maxAnswer = 64 << 10
)

// ErrBadURL is returned for a URL that does not end in a device key.
var ErrBadURL = errors.New("bark: url must be an http(s) url ending in the device key: https://<server>/<key>")

// Target is the device a sink pushes to.
type Target struct {
	URL   string // https://<server>/<device key>
	Group string // unset: the task's name
}

// Sink pushes deliveries to one Bark device.
type Sink struct {
	t       Target
	push    string // the server's /push URL: no secret in it
	key     string
	secrets []string
	client  *http.Client
	egress  egress.Options
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

// WithClock sets the clock for relative times.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// New returns a sink pushing to t. Its errors never carry the URL or the
// key.
func New(t Target, opts ...Option) (*Sink, error) {
	push, key, err := splitKey(t.URL)
	if err != nil {
		return nil, err
	}
	s := &Sink{t: t, push: push, key: key, secrets: secrets(t.URL), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if err := egress.CheckURL(push, s.egress.AllowPrivate); err != nil {
		return nil, err
	}
	s.egress.Timeout = cmp.Or(s.egress.Timeout, DefaultTimeout)
	s.client = egress.Client(s.egress)
	return s, nil
}

// Push is the JSON body the sink posts.
type Push struct {
	DeviceKey string `json:"device_key"`
	Title     string `json:"title,omitempty"`
	Body      string `json:"body"`
	URL       string `json:"url,omitempty"`
	Group     string `json:"group,omitempty"`
}

// Compose renders d's message as the push Send posts: the headline as
// the title, the rest as plain text cut so the APNs payload stays within
// MaxPayload (between lines where it can, never inside a link), the
// item's link as the URL the notification opens.
func (s *Sink) Compose(d delivery.Delivery) Push {
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	title, text, link := render.Plain(d.Message, d.Lang, d.Zone, at)
	p := Push{DeviceKey: s.key, Title: render.CutBytes(title, MaxTitle), URL: link, Group: cmp.Or(s.t.Group, d.Message.TaskName, d.Message.TaskID)}
	p.Group = render.CutBytes(p.Group, MaxTitle)
	// Measured as bark-server encodes them (with <, > and & escaped);
	// the link and group travel twice.
	fixed := jsonSize(p.Title) + 2*jsonSize(p.URL) + 2*jsonSize(p.Group)
	limit := MaxPayload - payloadOverhead - fixed
	for {
		p.Body = render.CutText(text, max(limit, 0))
		over := jsonSize(p.Body) + fixed - (MaxPayload - payloadOverhead)
		if over <= 0 || limit <= 0 {
			return p
		}
		limit -= over
	}
}

func jsonSize(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// Send pushes d's message once and classifies the answer:
//
//   - code 200 (in HTTP 200): completed.
//   - An unknown device key, no key, a device Apple no longer knows, a
//     server's refused basic auth (418): failed, and the recipient
//     unreachable.
//   - 429, Apple's too many pushes: retry_after; Apple's service down:
//     retry_after (Apple delivered nothing).
//   - Any other error code or 4xx, a redirect: failed.
//   - An answer without a code, a 5xx that is not bark-server's push
//     error, a timeout or a dropped connection after the request went
//     out: unknown. bark-server takes no key to drop a repeated push by,
//     so these are never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	return robot.Send(s.log, Kind, "bark", s.secrets, d, 1, func() (delivery.Outcome, error) { return s.send(ctx, d) })
}

func (s *Sink) send(ctx context.Context, d delivery.Delivery) (delivery.Outcome, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s.Compose(d)); err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.push, &body)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_url"}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
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

// Apple's reasons, as bark-server passes them on after "push failed:",
// with a meaning of their own.
var (
	deadDevice  = []string{"BadDeviceToken", "Unregistered", "DeviceTokenNotForTopic", "ExpiredToken"}
	appleBusy   = []string{"TooManyRequests"}
	appleDown   = []string{"InternalServerError", "ServiceUnavailable", "Shutdown"}
	appleTooBig = []string{"PayloadTooLarge"}
)

func names(msg string, reasons []string) bool {
	for _, r := range reasons {
		if strings.Contains(msg, r) {
			return true
		}
	}
	return false
}

// Classify maps an answer of bark-server to an outcome. bark-server
// answers {"code","message"} with the HTTP status equal to the code; the
// code is read even in an HTTP 200, and only code 200 is completed.
func Classify(status int, retryAfter string, raw []byte, now time.Time) delivery.Outcome {
	var a struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	}
	parsed := json.Unmarshal(raw, &a) == nil && a.Code != nil
	code := status
	if parsed {
		code = *a.Code
	}
	msg := a.Message
	switch {
	case status == http.StatusOK && parsed && code == http.StatusOK:
		return delivery.Outcome{Result: delivery.Completed}
	case status == http.StatusOK && !parsed:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case status == http.StatusTeapot:
		// bark-server's answer to a refused basic auth.
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_credentials", Unreachable: true}
	case status == http.StatusTooManyRequests || code == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: cmp.Or(parseRetryAfter(retryAfter, now), RateLimitedWait), Reason: "rate_limited"}
	case status >= 300 && status < 400:
		return delivery.Outcome{Result: delivery.Failed, Reason: "redirect"}
	case parsed && code == http.StatusBadRequest && (strings.Contains(msg, "device token") || strings.Contains(msg, "device key")):
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_key", Unreachable: true}
	case parsed && code >= 500 && strings.HasPrefix(msg, "push failed"):
		switch {
		case names(msg, deadDevice):
			return delivery.Outcome{Result: delivery.Failed, Reason: "device_gone", Unreachable: true}
		case names(msg, appleBusy):
			return delivery.Outcome{Result: delivery.RetryAfter, After: RateLimitedWait, Reason: "apns_rate_limited"}
		case names(msg, appleDown):
			return delivery.Outcome{Result: delivery.RetryAfter, After: UnavailableWait, Reason: "apns_unavailable"}
		case names(msg, appleTooBig):
			return delivery.Outcome{Result: delivery.Failed, Reason: "too_large"}
		}
		return delivery.Outcome{Result: delivery.Failed, Reason: "push_failed"}
	case status == http.StatusRequestTimeout || status >= 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case parsed:
		return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(code)}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
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
