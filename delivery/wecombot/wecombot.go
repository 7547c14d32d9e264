// Package wecombot is the delivery sink for WeCom (WeChat Work) group robots:
// a markdown message POSTed to the robot's hook URL, split by UTF-8 bytes
// within the platform's limit, paced to the robot's 20 messages a minute
// across replicas, each answer's errcode classified.
package wecombot

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "wecom_bot"

// MaxContent is the most UTF-8 bytes one markdown message may hold.
const MaxContent = 4096

// codes are the errcodes with a meaning of their own.
var codes = robot.Codes{
	45009: {Reason: "rate_limited", TooFast: true},              // api freq out of limit
	93000: {Reason: "bad_key", BadCredential: true, Gone: true}, // invalid webhook url: wrong key, or the robot was removed
	40008: {Reason: "bad_key", BadCredential: true},
}

// Sink posts deliveries to one WeCom group robot.
type Sink struct{ conn *robot.Conn }

var _ delivery.Sink = (*Sink)(nil)

// New returns a sink posting to hookURL, with robot's options;
// robot.ErrBadHook for a URL that is not http(s).
func New(hookURL string, opts ...robot.Option) (*Sink, error) {
	c, err := robot.Dial(robot.Robot{Kind: Kind, Name: "wecom robot", Hook: hookURL}, opts...)
	if err != nil {
		return nil, err
	}
	return &Sink{conn: c}, nil
}

// Parts renders d's message as the markdown parts Send posts.
func (s *Sink) Parts(d delivery.Delivery) []string {
	return render.Markdown(d.Message, d.Lang, d.Zone, s.conn.At(d), render.MarkdownStyle{Limit: MaxContent, Break: "\n"})
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
	parts := s.Parts(d)
	return s.conn.Send(d, len(parts), func() (delivery.Outcome, error) { return s.send(ctx, parts[d.Part]) })
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
	return s.conn.Post(ctx, body.Bytes(), s.conn.Hook, codes.Classify)
}
