// Package webhook is the outbound HTTPS webhook sink. It POSTs one JSON
// document per delivery, signed with Standard Webhooks headers, through the
// guarded egress client (SSRF guard at dial time, no redirects), and
// classifies the attempt; it never retries.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/webhook/signature"
)

const (
	// DefaultTimeout bounds one attempt, from dial to the end of the response.
	DefaultTimeout = 10 * time.Second
	// MaxResponseBody is how much of a response is read before closing it.
	MaxResponseBody = 64 << 10
	// DefaultRetryAfter is the wait after a 429 without a usable Retry-After.
	DefaultRetryAfter = 30 * time.Second
	// NotSentRetryAfter is the least wait after an attempt that provably
	// never left (connection refused, DNS failure).
	NotSentRetryAfter = delivery.NotSentWait
)

// Sentinel errors of New.
var (
	ErrConfig = errors.New("webhook recipient misconfigured")
)

// Outcome reasons reported by the sink. They are stable strings, never
// carrying the URL, the secret or a server's message.
const (
	ReasonBlocked       = "blocked_address"
	ReasonRedirect      = "redirect"
	ReasonGone          = "gone"
	ReasonRateLimited   = "rate_limited"
	ReasonTimeout       = delivery.ReasonTimeout
	ReasonCanceled      = delivery.ReasonCanceled
	ReasonConnLost      = delivery.ReasonConnLost
	ReasonConnectFailed = delivery.ReasonConnectFailed
	ReasonDNS           = "dns_failed"
	ReasonBadKind       = "unsupported_kind"
	ReasonEncode        = "encode_failed"
)

// Sink delivers to one named HTTPS webhook recipient.
type Sink struct {
	name       string
	url        string
	key        []byte
	idempotent bool
	userAgent  string
	rt         http.RoundTripper
	timeout    time.Duration
	now        func() time.Time
	policy     delivery.RetryPolicy
}

var (
	_ delivery.Sink          = (*Sink)(nil)
	_ delivery.Deduplicating = (*Sink)(nil)
	_ delivery.Retrying      = (*Sink)(nil)
)

// New builds the sink for the named recipient. rawURL is checked by
// egress.CheckURL (https only; private and loopback destinations only
// with o.AllowPrivate) and secret must be a "whsec_" secret. idempotent
// declares that the receiver deduplicates by webhook-id, which lets the
// dispatcher retry an unknown outcome (I3). A zero o.Timeout means
// DefaultTimeout. Errors name the recipient but never the URL or secret.
func New(name, rawURL, secret string, idempotent bool, o egress.Options) (*Sink, error) {
	if err := egress.CheckURL(rawURL, o.AllowPrivate); err != nil {
		return nil, fmt.Errorf("%w: webhook %q: url: %w", ErrConfig, name, err)
	}
	key, err := signature.ParseSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook %q: secret: %w", ErrConfig, name, err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = egress.DefaultUserAgent()
	}
	p := delivery.RetryPolicy{DisableAfter: DefaultDisableAfter}
	if idempotent {
		p.Schedule = DefaultSchedule
	}
	return &Sink{
		policy:     p,
		name:       name,
		url:        rawURL,
		key:        key,
		idempotent: idempotent,
		userAgent:  o.UserAgent,
		rt:         egress.SharedTransport(o),
		timeout:    o.Timeout,
		now:        time.Now,
	}, nil
}

// WithPolicy sets the recipient's retry schedule and disable policy
// (New: DefaultSchedule when idempotent, DefaultDisableAfter). A
// schedule is kept only for an idempotent recipient.
func (s *Sink) WithPolicy(p delivery.RetryPolicy) *Sink {
	if !s.idempotent {
		p.Schedule = nil
	}
	s.policy = p
	return s
}

// RetryPolicy implements delivery.Retrying.
func (s *Sink) RetryPolicy(delivery.Address) delivery.RetryPolicy { return s.policy }

// Name is the recipient's configured name.
func (s *Sink) Name() string { return s.name }

// Dedups reports whether the receiver was declared idempotent by webhook-id.
func (s *Sink) Dedups(delivery.Address) bool { return s.idempotent }

// Send POSTs the message once and classifies the attempt:
//
//   - 2xx: Completed.
//   - 3xx: Failed "redirect" (redirects are never followed); 410: Failed
//     "gone", the recipient gone (it is disabled); other 4xx but 408,
//     409, 425 and 429: Failed.
//   - 429: RetryAfter, waiting Retry-After (seconds or an HTTP date;
//     DefaultRetryAfter without one).
//   - The request never left (guard refused: Failed "blocked_address";
//     connection refused, DNS, TLS handshake: RetryAfter).
//   - Anything that may have reached the receiver (408, 409, 425, 5xx, a
//     timeout or a dropped connection after the request was written):
//     Unknown, with the answer's Retry-After as After when it has one.
//
// The webhook-timestamp is the attempt's and is signed afresh each time
// (Standard Webhooks); the webhook-id and the body are the same on every
// attempt of one push.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	if err := ctx.Err(); err != nil {
		return delivery.Outcome{Result: delivery.RetryAfter, Reason: ReasonCanceled}
	}
	now := s.now()
	if !knownKind(d.Message.Kind) {
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonBadKind}
	}
	body, err := Encode(d.Key, d.Message, now)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonEncode}
	}
	// The attempt's timeout, from dial to the end of the response.
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_url"}
	}
	// Keys in canonical form, set at once: this is every push's path.
	req.Header = http.Header{
		"Content-Type":      {"application/json"},
		"User-Agent":        {s.userAgent},
		"Webhook-Id":        {d.Key},
		"Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
		"Webhook-Signature": {signature.Sign(s.key, d.Key, now, body)},
	}

	// net/http replays a request on a reused connection only when nothing
	// was written or the request is marked replayable (GET, or an
	// Idempotency-Key header). This POST carries no such header, so a
	// connection lost after the write surfaces here as Unknown, never as a
	// silent second delivery.
	//
	// The guarded transport is used directly: a redirect comes back as the
	// response anyway, and http.Client would copy the headers for one and
	// arm a timer per request on every push.
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		return classifyError(ctx, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
	_ = resp.Body.Close()
	return classifyStatus(resp, s.now())
}

func knownKind(k string) bool {
	switch k {
	case delivery.KindChanged, delivery.KindDeadline, delivery.KindInbound, delivery.KindState, delivery.KindTest, delivery.KindDigest:
		return true
	}
	return false
}

// classifyError sorts a transport error by whether the request may have
// reached the receiver. The error text is never reported: it carries the URL.
// The webhook sink's own reasons for what never left (guard, DNS, dial,
// cancelled before the dial) are decided here; the rest is
// delivery.ClassifyTransport's.
func classifyError(ctx context.Context, err error) delivery.Outcome {
	switch {
	case errors.Is(err, egress.ErrBlocked):
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonBlocked}
	case errors.Is(err, egress.ErrProxy):
		return delivery.ClassifyTransport(err)
	case egress.NotSent(err):
		reason := ReasonConnectFailed
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			reason = ReasonDNS
		}
		if ctx.Err() != nil {
			reason = ReasonCanceled
		}
		return delivery.Outcome{Result: delivery.RetryAfter, After: NotSentRetryAfter, Reason: reason}
	case errors.Is(ctx.Err(), context.Canceled):
		return delivery.Outcome{Result: delivery.Unknown, Reason: ReasonCanceled}
	}
	return delivery.ClassifyTransport(err)
}

func classifyStatus(resp *http.Response, now time.Time) delivery.Outcome {
	code := resp.StatusCode
	reason := "http_" + strconv.Itoa(code)
	switch {
	case code >= 200 && code < 300:
		return delivery.Outcome{Result: delivery.Completed}
	case code >= 300 && code < 400:
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonRedirect}
	case code == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, Reason: ReasonRateLimited,
			After: RetryAfter(resp.Header.Get("Retry-After"), now)}
	case code == http.StatusRequestTimeout, code == http.StatusConflict, code == http.StatusTooEarly:
		return delivery.Outcome{Result: delivery.Unknown, Reason: reason, After: askedWait(resp, now)}
	case code == http.StatusGone:
		return delivery.Outcome{Result: delivery.Failed, Reason: ReasonGone, Unreachable: true, Gone: true}
	case code >= 400 && code < 500:
		return delivery.Outcome{Result: delivery.Failed, Reason: reason}
	}
	return delivery.Outcome{Result: delivery.Unknown, Reason: reason, After: askedWait(resp, now)}
}

// askedWait is the wait a failed answer's Retry-After asks for; 0 without one.
func askedWait(resp *http.Response, now time.Time) time.Duration {
	if v := resp.Header.Get("Retry-After"); strings.TrimSpace(v) != "" {
		return RetryAfter(v, now)
	}
	return 0
}

// RetryAfter parses a Retry-After header value: delay seconds or an HTTP
// date (relative to now). Missing or unusable values give
// DefaultRetryAfter; a date in the past gives zero.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultRetryAfter
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return DefaultRetryAfter
}

// Body is the JSON document POSTed to a webhook recipient (docs/delivery.md, What a webhook recipient receives).
type Body struct {
	Type       string     `json:"type"`
	ID         string     `json:"id"`
	Task       *BodyTask  `json:"task,omitempty"`
	OccurredAt string     `json:"occurred_at"`
	Items      []BodyItem `json:"items"`
	Text       string     `json:"text,omitempty"`
	// Machine is what a model wrote about the notice (summarize,
	// translate): machine-written, never the source's own words.
	Machine *delivery.MachineText `json:"machine,omitempty"`
}

// BodyTask names the task a message is about.
type BodyTask struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// BodyItem is one listed item. WasTitle and WasDue say what a changed
// item was before; they are optional and omitted when empty, so
// receivers written before them keep working.
type BodyItem struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Task     string `json:"task,omitempty"` // a watch.digest's item: the name of its task
	URL      string `json:"url,omitempty"`
	Change   string `json:"change"`
	Due      string `json:"due,omitempty"`
	WasTitle string `json:"was_title,omitempty"`
	WasDue   string `json:"was_due,omitempty"`
	// Summary is the item's own text in plain words, and Diff the lines
	// a page or JSON item gained and lost (SPEC §20); both optional.
	Summary string             `json:"summary,omitempty"`
	Diff    *delivery.ItemDiff `json:"diff,omitempty"`
}

// Encode renders the webhook body for message m under effect key key.
// Times are RFC 3339 in UTC; a message without OccurredAt takes now. The
// bytes are signed as they are: receivers must verify the raw body.
func Encode(key string, m delivery.Message, now time.Time) ([]byte, error) {
	occurred := m.OccurredAt
	if occurred.IsZero() {
		occurred = now
	}
	b := Body{
		Type:       m.Kind,
		ID:         key,
		OccurredAt: occurred.UTC().Format(time.RFC3339),
		Items:      make([]BodyItem, 0, len(m.Items)),
		Text:       cmp.Or(m.Body, m.Text), // a recipient's template lays out the text
		Machine:    m.Machine,
	}
	if m.TaskID != "" || m.TaskName != "" {
		b.Task = &BodyTask{ID: m.TaskID, Name: m.TaskName}
	}
	for _, it := range m.Items {
		bi := BodyItem{ID: it.ID, Title: it.Title, Task: it.Task, URL: it.URL, Change: it.Change, WasTitle: it.WasTitle}
		if !it.Due.IsZero() {
			bi.Due = it.Due.UTC().Format(time.RFC3339)
		}
		if !it.WasDue.IsZero() {
			bi.WasDue = it.WasDue.UTC().Format(time.RFC3339)
		}
		bi.Summary, bi.Diff = it.Summary, it.Diff
		b.Items = append(b.Items, bi)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
