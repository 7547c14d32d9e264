// Package pushplus is the delivery sink for personal WeChat through
// PushPlus: one JSON POST to /send per message with the account's token,
// the content as escaped HTML with its links, the account's daily quota
// counted in the store, and the code inside each HTTP 200 answer
// classified.
package pushplus

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "pushplus"

const (
	// DefaultBaseURL is PushPlus's public endpoint; a base_url replaces
	// it (a self-hosted gateway, a test server).
	DefaultBaseURL = "https://www.pushplus.plus"
	// DefaultDailyLimit is a normal account's daily quota on the WeChat
	// channel; going over it blocks the account until the next day, and
	// far over it for days.
	DefaultDailyLimit = 200
	// MaxTitle is the most characters herald puts in a title.
	MaxTitle = 100
	// MaxContent is the most characters of text herald puts in one
	// message before the HTML markup; the rest is cut off with an
	// ellipsis. PushPlus bills per message, so a long message is never
	// split.
	MaxContent = 10000
	// TooFastWait is how long to wait after an HTTP 429.
	TooFastWait = time.Minute
)

// Sink posts deliveries to one PushPlus account or group.
type Sink struct {
	conn  *robot.Conn
	token string
	topic string
	quota *robot.DailyQuota
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a sink.
type Option func(*options)

type options struct {
	robot   []robot.Option
	buckets store.Buckets
	base    string
	topic   string
	limit   int
}

// WithRobot adds options of the connection (egress, logger, clock).
func WithRobot(o ...robot.Option) Option {
	return func(op *options) { op.robot = append(op.robot, o...) }
}

// WithBuckets counts the daily quota in the store's buckets (default:
// not counted; the service's own refusal is still honoured).
func WithBuckets(b store.Buckets) Option { return func(op *options) { op.buckets = b } }

// WithBaseURL sends to base instead of DefaultBaseURL: a self-hosted
// gateway, a proxy, a test server.
func WithBaseURL(base string) Option { return func(op *options) { op.base = base } }

// WithTopic sends to the subscribers of the group whose code is topic
// instead of the token's owner.
func WithTopic(topic string) Option { return func(op *options) { op.topic = topic } }

// WithDailyLimit counts at most n sends a service day (default
// DefaultDailyLimit; n < 0 counts nothing).
func WithDailyLimit(n int) Option { return func(op *options) { op.limit = n } }

// New returns a sink sending with the account's token; robot.ErrBadHook
// for a base URL that is not http(s).
func New(token string, opts ...Option) (*Sink, error) {
	op := options{base: DefaultBaseURL, limit: DefaultDailyLimit}
	for _, o := range opts {
		o(&op)
	}
	hook := strings.TrimRight(op.base, "/") + "/send"
	c, err := robot.Dial(robot.Robot{Kind: Kind, Name: "pushplus", Hook: hook, Secret: token}, op.robot...)
	if err != nil {
		return nil, err
	}
	s := &Sink{conn: c, token: token, topic: op.topic}
	if op.buckets != nil {
		// The quota is the account's: recipients on one token share it,
		// whatever their topics.
		s.quota = robot.NewDailyQuota(op.buckets, Kind, token, op.limit)
	}
	return s, nil
}

// Render renders d's message as PushPlus's title (plain text) and
// content (HTML).
func (s *Sink) Render(d delivery.Delivery) (title, content string) {
	at := s.conn.At(d)
	return Title(render.Title(d.Message, d.Lang, at)), HTML(render.Text(d.Message, d.Lang, d.Zone, at))
}

// Title makes t a title: one line of at most MaxTitle characters with no
// markup, its angle brackets written full-width, since the title is shown
// both as text and inside the service's pages.
func Title(t string) string {
	t = strings.Join(strings.Fields(strings.ToValidUTF8(t, "\uFFFD")), " ")
	t = strings.NewReplacer("<", "\uFF1C", ">", "\uFF1E").Replace(t)
	return clip(t, MaxTitle)
}

// HTML renders plain text as HTML: every line escaped, each http(s) URL
// in it made a link, the first line bold, at most MaxContent characters
// of the text.
func HTML(text string) string {
	text = clip(strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\n"), MaxContent)
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteString("<br>\n")
		}
		if i == 0 {
			b.WriteString("<b>" + html.EscapeString(line) + "</b>")
			continue
		}
		last := 0
		for _, m := range urlPattern.FindAllStringIndex(line, -1) {
			u := strings.TrimRight(line[m[0]:m[1]], ".,;:!?")
			m[1] = m[0] + len(u)
			if !link(u) {
				continue
			}
			b.WriteString(html.EscapeString(line[last:m[0]]))
			b.WriteString(`<a href="` + html.EscapeString(u) + `">` + html.EscapeString(u) + "</a>")
			last = m[1]
		}
		b.WriteString(html.EscapeString(line[last:]))
	}
	return b.String()
}

// urlPattern finds what may be a URL in text: http(s):// and the
// printable ASCII after it, up to a space or any other character; the
// punctuation that ends a sentence is not part of it.
var urlPattern = regexp.MustCompile(`https?://[!-~]+`)

// link reports whether s is one absolute http(s) URL.
func link(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, "\"'<>")
}

// clip cuts s to at most n characters, ending with an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for k < n-1 {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		k++
	}
	return s[:i] + "…"
}

type request struct {
	Token    string `json:"token"`
	Title    string `json:"title"`
	Content  string `json:"content"`
	Template string `json:"template"`
	Topic    string `json:"topic,omitempty"`
}

// Send posts d.Message as one message. A timeout or a dropped connection
// after the request went out is unknown: PushPlus has no idempotency key,
// so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	return s.conn.Send(d, 1, func() (delivery.Outcome, error) {
		title, content := s.Render(d)
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(request{Token: s.token, Title: title, Content: content, Template: "html", Topic: s.topic}); err != nil {
			return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
		}
		if out, ok := s.quota.Take(ctx, s.conn.Now()); !ok {
			return out, nil
		}
		now := s.conn.Now()
		return s.conn.Post(ctx, body.Bytes(), s.conn.Hook, func(status int, raw []byte) delivery.Outcome {
			return Classify(status, raw, now)
		})
	})
}

// Classify maps a PushPlus answer at now to an outcome. Only HTTP 200
// with code 200 is completed (PushPlus accepted the message; it delivers
// on its own):
//
//   - HTTP 401 or 403, and codes 302 (not logged in), 401 (unauthorized),
//     903 (invalid token): failed "bad_token", and the recipient is
//     unreachable until the token is fixed; 403 (IP not whitelisted), 805
//     (no permission), 905 (account not verified): failed and
//     unreachable with their reasons.
//   - Code 900 (account restricted for too many requests): retry when the
//     service's next day has begun (midnight UTC+8).
//   - Code 500 (system error), HTTP 408 and 5xx: unknown, the message
//     may have been taken.
//   - HTTP 429: retry after a minute.
//   - Any other code (600 bad data, 888 insufficient points, 999): failed.
func Classify(status int, raw []byte, now time.Time) delivery.Outcome {
	var a struct {
		Code *int            `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	parsed := json.Unmarshal(raw, &a) == nil && a.Code != nil
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
	}
	switch *a.Code {
	case 200:
		var serial string
		if json.Unmarshal(a.Data, &serial) != nil {
			serial = ""
		}
		return delivery.Outcome{Result: delivery.Completed, ProviderID: serial}
	case 302, 401, 903:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_token", Unreachable: true}
	case 403:
		return delivery.Outcome{Result: delivery.Failed, Reason: "ip_not_allowed", Unreachable: true}
	case 805:
		return delivery.Outcome{Result: delivery.Failed, Reason: "no_permission", Unreachable: true}
	case 905:
		return delivery.Outcome{Result: delivery.Failed, Reason: "not_verified", Unreachable: true}
	case 900:
		return delivery.Outcome{Result: delivery.RetryAfter, After: robot.NextDay(now), Reason: "account_restricted"}
	case 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "code_500"}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(*a.Code)}
}

// fromDeps are the options of a sink built from its config: the guarded
// egress client, the logger, and the daily quota counted in the store.
func fromDeps(deps delivery.SinkDeps) []Option {
	opts := []Option{WithRobot(robot.WithEgress(deps.Egress), robot.WithLogger(deps.Log))}
	if deps.Store != nil {
		opts = append(opts, WithBuckets(deps.Store.Buckets()))
	}
	return opts
}
