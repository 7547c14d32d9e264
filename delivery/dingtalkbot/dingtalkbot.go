// Package dingtalkbot is the delivery sink for DingTalk custom group
// robots: a markdown message with a title POSTed to the robot's hook URL,
// signed afresh for every attempt when the robot has a secret, split
// within the platform's body limit, paced to the robot's 20 messages a
// minute across replicas, each answer's errcode classified.
package dingtalkbot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "dingtalk_bot"

// Limits of the robot API.
const (
	// MaxBody is the largest request body the robot accepts (errcode
	// 460101 beyond it).
	MaxBody = 20000
	// MaxText is the most one part's text may take in the JSON body,
	// leaving room for the title and the envelope.
	MaxText = MaxBody - 1024
	// maxTitle caps the title, in characters; it shows in the chat list.
	maxTitle = 64
)

// codes are the errcodes with a meaning of their own.
var codes = robot.Codes{
	130101: {Reason: "rate_limited", TooFast: true},                // send too fast
	310000: {Reason: "bad_signature", BadCredential: true},         // sign, keyword or IP check failed
	300001: {Reason: "bad_token", BadCredential: true, Gone: true}, // invalid access token
	300005: {Reason: "bad_token", BadCredential: true, Gone: true}, // token does not exist
	460101: {Reason: "too_large"},                                  // body over the limit
}

// Sink posts deliveries to one DingTalk robot.
type Sink struct {
	conn   *robot.Conn
	secret string
}

var _ delivery.Sink = (*Sink)(nil)

// New returns a sink posting to hookURL, with robot's options, signing
// with secret (empty: the robot checks no signature); robot.ErrBadHook for
// a URL that is not http(s).
func New(hookURL, secret string, opts ...robot.Option) (*Sink, error) {
	c, err := robot.Dial(robot.Robot{Kind: Kind, Name: "dingtalk robot", Hook: hookURL, Secret: secret}, opts...)
	if err != nil {
		return nil, err
	}
	return &Sink{conn: c, secret: secret}, nil
}

// Sign is the robot's signature for timestamp (unix milliseconds):
// base64(HMAC-SHA256(key = secret, message = timestamp + "\n" + secret)),
// before URL encoding.
func Sign(timestamp, secret string) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(timestamp + "\n" + secret))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// signedURL is the hook with a fresh timestamp and signature.
func (s *Sink) signedURL() string {
	hook := s.conn.Hook()
	if s.secret == "" {
		return hook
	}
	ts := strconv.FormatInt(s.conn.Now().UnixMilli(), 10)
	sep := "&"
	if !strings.Contains(hook, "?") {
		sep = "?"
	}
	return hook + sep + "timestamp=" + ts + "&sign=" + url.QueryEscape(Sign(ts, s.secret))
}

// jsonSize is how many bytes s takes inside a JSON string.
func jsonSize(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// Parts renders d's message as the markdown parts Send posts, with the
// title each part carries.
func (s *Sink) Parts(d delivery.Delivery) (title string, parts []string) {
	at := s.conn.At(d)
	title = render.Title(d.Message, d.Lang, at)
	if utf8.RuneCountInString(title) > maxTitle {
		title = string([]rune(title)[:maxTitle-1]) + "…"
	}
	return title, render.Markdown(d.Message, d.Lang, d.Zone, at, render.MarkdownStyle{Limit: MaxText, Size: jsonSize, Break: "  \n"})
}

type request struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"markdown"`
}

// Send posts part d.Part of d.Message. A timeout or a dropped connection
// after the request went out is unknown: the robot has no idempotency
// key, so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	title, parts := s.Parts(d)
	if len(parts) > 1 {
		title += " (" + strconv.Itoa(d.Part+1) + "/" + strconv.Itoa(len(parts)) + ")"
	}
	return s.conn.Send(d, len(parts), func() (delivery.Outcome, error) { return s.send(ctx, title, parts[d.Part]) })
}

func (s *Sink) send(ctx context.Context, title, text string) (delivery.Outcome, error) {
	var req request
	req.MsgType = "markdown"
	req.Markdown.Title, req.Markdown.Text = title, text
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil || body.Len() > MaxBody {
		return delivery.Outcome{Result: delivery.Failed, Reason: "too_large"}, nil
	}
	// Signed after pacing, so the timestamp is the send's own.
	return s.conn.Post(ctx, body.Bytes(), s.signedURL, codes.Classify)
}
