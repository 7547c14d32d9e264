// Package onebot is the delivery sink for QQ through a OneBot v11 HTTP API
// (NapCat, Lagrange.OneBot, go-cqhttp): send_group_msg or send_private_msg
// POSTed as JSON, the message given as an array of text segments so that
// nothing in it is ever read as a CQ code, split by characters, paced like
// a group robot, each answer's status and retcode classified.
package onebot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "onebot"

// MaxText is the most characters one QQ message carries. Implementations
// state no limit; messages of about 5000 characters are known to pass,
// and long messages draw the platform's risk control, so herald stays
// well below.
const MaxText = 3000

// Target is whom a sink sends to: a QQ group or one QQ user.
type Target struct {
	GroupID int64
	UserID  int64
}

// Sink posts deliveries to one QQ group or user through a OneBot HTTP API.
type Sink struct {
	conn   *robot.Conn
	action string
	target Target
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a sink.
type Option func(*options)

type options struct {
	egress  egress.Options
	robot   []robot.Option
	timeout time.Duration
}

// WithEgress sets the options of the guarded egress client.
func WithEgress(o egress.Options) Option { return func(op *options) { op.egress = o } }

// WithRobot adds options of the connection (logger, clock, pacing).
func WithRobot(o ...robot.Option) Option {
	return func(op *options) { op.robot = append(op.robot, o...) }
}

// New returns a sink posting to the OneBot HTTP API at base (e.g.
// http://127.0.0.1:3000), authenticating with token when it is set;
// robot.ErrBadHook for a base that is not http(s).
func New(base, token string, to Target, opts ...Option) (*Sink, error) {
	var op options
	for _, o := range opts {
		o(&op)
	}
	if op.egress.Timeout <= 0 {
		op.egress.Timeout = robot.DefaultTimeout
	}
	client := egress.Client(op.egress)
	client.Transport = &auth{base: client.Transport, token: token}
	action := "send_group_msg"
	if to.GroupID == 0 {
		action = "send_private_msg"
	}
	hook := strings.TrimRight(base, "/") + "/" + action
	c, err := robot.Dial(robot.Robot{Kind: Kind, Name: "onebot", Hook: hook, Secret: token},
		append([]robot.Option{robot.WithHTTPClient(client)}, op.robot...)...)
	if err != nil {
		return nil, err
	}
	return &Sink{conn: c, action: action, target: to}, nil
}

// auth sets the bearer token and the exact media type some
// implementations insist on (a charset parameter is refused with 406).
type auth struct {
	base  http.RoundTripper
	token string
}

func (a *auth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		r.Header.Set("Authorization", "Bearer "+a.token)
	}
	return a.base.RoundTrip(r)
}

// Parts renders d's message as the plain-text parts Send posts.
func (s *Sink) Parts(d delivery.Delivery) []string {
	return Split(render.Text(d.Message, d.Lang, d.Zone, s.conn.At(d)), MaxText)
}

// Split cuts text into parts of at most limit characters, between lines
// where it can, else between characters; every part is valid UTF-8.
func Split(text string, limit int) []string {
	text = strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\n")
	var parts []string
	var cur strings.Builder
	n := 0
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, strings.TrimRight(cur.String(), "\n"))
			cur.Reset()
			n = 0
		}
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		ln := utf8.RuneCountInString(line)
		if n+ln > limit {
			flush()
		}
		for ln > limit {
			i := 0
			for k := 0; k < limit; k++ {
				_, w := utf8.DecodeRuneInString(line[i:])
				i += w
			}
			parts = append(parts, line[:i])
			line, ln = line[i:], ln-limit
		}
		cur.WriteString(line)
		n += ln
	}
	flush()
	if len(parts) == 0 {
		parts = []string{""}
	}
	return parts
}

// segment is one element of a OneBot message array. A text segment's
// text is literal: no CQ code inside it is ever interpreted.
type segment struct {
	Type string `json:"type"`
	Data struct {
		Text string `json:"text"`
	} `json:"data"`
}

type request struct {
	GroupID int64     `json:"group_id,omitempty"`
	UserID  int64     `json:"user_id,omitempty"`
	Message []segment `json:"message"`
}

// Send posts part d.Part of d.Message. A timeout or a dropped connection
// after the request went out is unknown: OneBot has no idempotency key,
// so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	parts := s.Parts(d)
	return s.conn.Send(d, len(parts), func() (delivery.Outcome, error) { return s.send(ctx, parts[d.Part]) })
}

func (s *Sink) send(ctx context.Context, text string) (delivery.Outcome, error) {
	req := request{GroupID: s.target.GroupID, UserID: s.target.UserID, Message: make([]segment, 1)}
	req.Message[0].Type = "text"
	req.Message[0].Data.Text = text
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
	}
	return s.conn.Post(ctx, body.Bytes(), s.conn.Hook, Classify)
}

// TooFastWait is how long to wait after a rate-limit answer.
const TooFastWait = time.Minute

// Classify maps a OneBot HTTP answer to an outcome. Only HTTP 200 with
// status "ok" and retcode 0 is completed:
//
//   - 401 (token missing) and 403 (token wrong): failed, and the recipient
//     is unreachable until the token is fixed.
//   - 429: retry after a minute; 408 and 5xx: unknown.
//   - Any other status (400 bad body, 404 unknown action or wrong base
//     URL, 405, 406, 415): failed.
//   - retcode 1 (status "async"): accepted, its outcome unknown.
//   - retcode 104 (credentials expired: the QQ account is logged out):
//     failed and unreachable; 404 (unknown action): failed and
//     unreachable, the URL is not a OneBot API; 201 (worker pool not
//     ready, nothing done): retry after a minute; 200 (NapCat and
//     Lagrange report a handler exception so, which may have been
//     mid-send): unknown; any other: failed.
func Classify(status int, raw []byte) delivery.Outcome {
	var a struct {
		Status  string `json:"status"`
		Retcode *int   `json:"retcode"`
		Data    struct {
			MessageID json.Number `json:"message_id"`
		} `json:"data"`
	}
	parsed := status == http.StatusOK && json.Unmarshal(raw, &a) == nil && a.Retcode != nil
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_token", Unreachable: true}
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TooFastWait, Reason: "rate_limited"}
	case status >= 500 || status == http.StatusRequestTimeout:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case status != http.StatusOK:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
	case !parsed:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case *a.Retcode == 0 && cmp.Or(a.Status, "ok") == "ok":
		return delivery.Outcome{Result: delivery.Completed, ProviderID: a.Data.MessageID.String()}
	case *a.Retcode == 1 || a.Status == "async":
		return delivery.Outcome{Result: delivery.Unknown, Reason: "async"}
	}
	switch code := *a.Retcode; {
	case code == 0: // neither ok nor async: not an answer the protocol gives
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case code == 104:
		return delivery.Outcome{Result: delivery.Failed, Reason: "logged_out", Unreachable: true}
	case code == 404:
		return delivery.Outcome{Result: delivery.Failed, Reason: "unknown_action", Unreachable: true}
	case code == 201:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TooFastWait, Reason: "not_ready"}
	case code == 200:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "code_200"}
	default:
		return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(code)}
	}
}
