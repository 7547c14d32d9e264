// Package feishubot is the delivery sink for Feishu custom group bots: an
// interactive card POSTed to the group's hook URL, signed with the bot's
// secret when one is set.
package feishubot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Limits of the custom bot API.
const (
	// MaxBody is the largest request body the hook accepts.
	MaxBody = 20 << 10
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
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
var ErrBadHook = robot.ErrBadHook

// Sink posts deliveries to one custom group bot.
type Sink struct {
	conn   *robot.Conn
	secret string
}

var _ delivery.Sink = (*Sink)(nil)

// New returns a sink posting to hookURL, with robot's options (the
// default timeout is DefaultTimeout), signing with secret (empty: the bot
// has no signature check).
func New(hookURL, secret string, opts ...robot.Option) (*Sink, error) {
	c, err := robot.Dial(robot.Robot{Kind: delivery.FeishuBot, Name: "feishu bot", Hook: hookURL, Secret: secret, Timeout: DefaultTimeout}, opts...)
	if err != nil {
		return nil, err
	}
	return &Sink{conn: c, secret: secret}, nil
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
	return s.conn.Send(d, 1, func() (delivery.Outcome, error) { return s.send(ctx, d) })
}

func (s *Sink) send(ctx context.Context, d delivery.Delivery) (delivery.Outcome, error) {
	card, err := render.FeishuCard(d.Message, d.Lang, d.Zone, s.conn.At(d))
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	req := request{MsgType: "interactive", Card: card}
	if s.secret != "" {
		req.Timestamp = strconv.FormatInt(s.conn.Now().Unix(), 10)
		req.Sign = Sign(req.Timestamp, s.secret)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	if len(body) > MaxBody {
		return delivery.Outcome{Result: delivery.Failed, Reason: "too_large"}, nil
	}
	return s.conn.Post(ctx, body, s.conn.Hook, classify)
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
