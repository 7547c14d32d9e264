// Package feishubot is the delivery sink for Feishu custom group bots: an
// interactive card POSTed to the group's hook URL, signed with the bot's
// secret when one is set.
package feishubot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
)

// Limits of the custom bot API.
const (
	// MaxBody is the largest request body the hook accepts.
	MaxBody = 20 << 10
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
	// maxResponse caps how much of an answer is read.
	maxResponse = 64 << 10
	// throttleWait is how long to wait after a throttling answer, which
	// carries no retry hint.
	throttleWait = 30 * time.Second
)

// Answer codes of the custom bot API.
const (
	codeOK            = 0
	codeBadSignature  = 19021 // sign mismatch or timestamp outside one hour
	codeThrottled     = 11232 // too many requests (often on the hour / half hour)
	codeRateLimited   = 9499  // request frequency limit
	codeLimitedOldAPI = 99991400
)

// ErrBadHook is returned by New for a hook URL that is not http(s).
var ErrBadHook = errors.New("feishubot: hook url must be an http(s) url")

// Sink posts deliveries to one custom group bot.
type Sink struct {
	hook   string
	secret string
	client *http.Client
	egress egress.Options
	log    zerolog.Logger
	now    func() time.Time
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a Sink.
type Option func(*Sink)

// WithHTTPClient replaces the HTTP client outright, bypassing the SSRF
// guard; WithEgress is the usual choice.
func WithHTTPClient(c *http.Client) Option { return func(s *Sink) { s.client = c } }

// WithEgress sets the options of the guarded egress client (default: zero
// Options, i.e. public destinations only, no redirects, DefaultTimeout).
func WithEgress(o egress.Options) Option { return func(s *Sink) { s.egress = o } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(s *Sink) { s.log = l } }

// WithClock sets the clock for signing timestamps and relative times.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// New returns a sink posting to hookURL, signing with secret (empty: the
// bot has no signature check).
func New(hookURL, secret string, opts ...Option) (*Sink, error) {
	u, err := url.Parse(hookURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrBadHook
	}
	s := &Sink{hook: hookURL, secret: secret, log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.client == nil {
		if s.egress.Timeout <= 0 {
			s.egress.Timeout = DefaultTimeout
		}
		s.client = egress.Client(s.egress)
	}
	return s, nil
}

// Sign computes the custom bot signature for timestamp (unix seconds):
// base64(HMAC-SHA256(key = timestamp + "\n" + secret, message = "")).
func Sign(timestamp, secret string) string {
	h := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

type request struct {
	Timestamp string          `json:"timestamp,omitempty"`
	Sign      string          `json:"sign,omitempty"`
	MsgType   string          `json:"msg_type"`
	Card      json.RawMessage `json:"card"`
}

// answer covers both the current ({"code","msg"}) and the older
// ({"StatusCode","StatusMessage"}) response forms.
type answer struct {
	Code       *int   `json:"code"`
	Msg        string `json:"msg"`
	StatusCode *int   `json:"StatusCode"`
}

// Send posts d.Message as one card. The message renders relative to its
// OccurredAt (or now).
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	if d.To.Kind != delivery.FeishuBot {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}
	}
	if d.Part != 0 {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part"}
	}
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	card, err := render.FeishuCard(d.Message, d.Lang, d.Zone, at)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}
	}
	req := request{MsgType: "interactive", Card: card}
	if s.secret != "" {
		req.Timestamp = strconv.FormatInt(s.now().Unix(), 10)
		req.Sign = Sign(req.Timestamp, s.secret)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}
	}
	if len(body) > MaxBody {
		return delivery.Outcome{Result: delivery.Failed, Reason: "too_large"}
	}
	out, err := s.post(ctx, body)
	ev := s.log.Debug()
	if out.Result != delivery.Completed {
		ev = s.log.Warn()
	}
	if err != nil {
		ev = ev.Str("error", s.redact(err))
	}
	ev.Str("recipient_kind", string(delivery.FeishuBot)).Str("recipient", d.To.Redacted()).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg("feishu bot send")
	return out
}

func (s *Sink) post(ctx context.Context, body []byte) (delivery.Outcome, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.hook, bytes.NewReader(body))
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_hook"}, err
	}
	hr.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := s.client.Do(hr)
	if err != nil {
		return classifyTransport(err), err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		// The request was answered; only the answer was lost.
		return delivery.Outcome{Result: delivery.Unknown, Reason: "connection_lost"}, err
	}
	return classify(resp.StatusCode, raw), nil
}

// classify maps an HTTP answer of the hook to an outcome.
func classify(status int, raw []byte) delivery.Outcome {
	var a answer
	parsed := json.Unmarshal(raw, &a) == nil && (a.Code != nil || a.StatusCode != nil)
	switch {
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: throttleWait, Reason: "rate_limited"}
	case status >= 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case !parsed && status >= 300:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
	case !parsed:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	}
	code := codeOK
	if a.Code != nil {
		code = *a.Code
	}
	if code == codeOK && a.StatusCode != nil {
		code = *a.StatusCode
	}
	switch code {
	case codeOK:
		if status >= 300 {
			return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
		}
		return delivery.Outcome{Result: delivery.Completed}
	case codeBadSignature:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_signature"}
	case codeThrottled, codeRateLimited, codeLimitedOldAPI:
		return delivery.Outcome{Result: delivery.RetryAfter, After: throttleWait, Reason: "rate_limited"}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(code)}
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

// redact renders err without the hook URL, whose path is a credential.
func (s *Sink) redact(err error) string {
	var uerr *url.Error
	msg := err.Error()
	if errors.As(err, &uerr) {
		msg = fmt.Sprintf("%s %s: %v", uerr.Op, redactURL(uerr.URL), uerr.Err)
	}
	msg = strings.ReplaceAll(msg, s.hook, redactURL(s.hook))
	if u, perr := url.Parse(s.hook); perr == nil && len(u.Path) > 1 {
		msg = strings.ReplaceAll(msg, u.Path, "/…")
	}
	if s.secret != "" {
		msg = strings.ReplaceAll(msg, s.secret, "…")
	}
	return msg
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<url>"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
