// Package serverchan is the delivery sink for personal WeChat through
// ServerChan: Turbo (sctapi.ftqq.com/<sendkey>.send) or ServerChan³
// (<uid>.push.ft07.com/send/<sendkey>.send), chosen by the send key's
// form. One JSON POST per message, the body as escaped Markdown with its
// links, the account's daily quota counted in the store, and the code
// inside each HTTP 200 answer classified. The send key is part of the URL,
// so the URL is a secret and never logged.
package serverchan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
const Kind delivery.AddressKind = "serverchan"

const (
	// TurboBaseURL is ServerChan Turbo's endpoint.
	TurboBaseURL = "https://sctapi.ftqq.com"
	// DefaultDailyLimit is how many messages a day herald sends one key
	// unless told otherwise: small, because the plan decides the quota.
	DefaultDailyLimit = 5
	// MaxTitle is the most characters of a title.
	MaxTitle = 32
	// MaxDesp is the most bytes of the Markdown body.
	MaxDesp = 32 << 10
	// QuotaWait is how long to wait after an HTTP 429: the caller went
	// over its limit for the last 24 hours.
	QuotaWait = 24 * time.Hour
)

// ErrBadKey is returned for a send key that is empty or cannot stand in a
// URL path.
var ErrBadKey = errors.New("serverchan: send key must be letters and digits")

var (
	keyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	sc3Pattern = regexp.MustCompile(`^sctp(\d+)t`)
)

// Endpoint is the URL a message for sendkey goes to: ServerChan³'s for a
// sctp<uid>t… key, else Turbo's; under base when it is set (a self-hosted
// gateway or a test server), in the same path form.
func Endpoint(base, sendkey string) (string, error) {
	if !keyPattern.MatchString(sendkey) {
		return "", ErrBadKey
	}
	m := sc3Pattern.FindStringSubmatch(sendkey)
	switch {
	case base != "" && m != nil:
		return strings.TrimRight(base, "/") + "/send/" + sendkey + ".send", nil
	case base != "":
		return strings.TrimRight(base, "/") + "/" + sendkey + ".send", nil
	case m != nil:
		return "https://" + m[1] + ".push.ft07.com/send/" + sendkey + ".send", nil
	}
	return TurboBaseURL + "/" + sendkey + ".send", nil
}

// Sink posts deliveries to one ServerChan send key.
type Sink struct {
	conn  *robot.Conn
	quota *robot.DailyQuota
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a sink.
type Option func(*options)

type options struct {
	robot   []robot.Option
	buckets store.Buckets
	base    string
	limit   int
}

// WithRobot adds options of the connection (egress, logger, clock).
func WithRobot(o ...robot.Option) Option {
	return func(op *options) { op.robot = append(op.robot, o...) }
}

// WithBuckets counts the daily quota in the store's buckets (default:
// not counted; the service's own refusal is still honoured).
func WithBuckets(b store.Buckets) Option { return func(op *options) { op.buckets = b } }

// WithBaseURL sends under base instead of the service's own endpoint,
// in the key's path form (see Endpoint).
func WithBaseURL(base string) Option { return func(op *options) { op.base = base } }

// WithDailyLimit counts at most n sends a service day (default
// DefaultDailyLimit; n < 0 counts nothing).
func WithDailyLimit(n int) Option { return func(op *options) { op.limit = n } }

// New returns a sink sending with sendkey; ErrBadKey or robot.ErrBadHook
// for a key or base URL that cannot make an http(s) URL. Errors never
// carry the key.
func New(sendkey string, opts ...Option) (*Sink, error) {
	op := options{limit: DefaultDailyLimit}
	for _, o := range opts {
		o(&op)
	}
	hook, err := Endpoint(op.base, sendkey)
	if err != nil {
		return nil, err
	}
	c, err := robot.Dial(robot.Robot{Kind: Kind, Name: "serverchan", Hook: hook, Secret: sendkey}, op.robot...)
	if err != nil {
		return nil, err
	}
	s := &Sink{conn: c}
	if op.buckets != nil {
		s.quota = robot.NewDailyQuota(op.buckets, Kind, sendkey, op.limit)
	}
	return s, nil
}

// Render renders d's message as ServerChan's title (one line of plain text)
// and desp (Markdown).
func (s *Sink) Render(d delivery.Delivery) (title, desp string) {
	at := s.conn.At(d)
	return Title(render.Title(d.Message, d.Lang, at)), Markdown(render.Text(d.Message, d.Lang, d.Zone, at))
}

// Title makes t a title: one line of at most MaxTitle characters, its
// angle brackets written full-width so that it is never markup.
func Title(t string) string {
	t = strings.Join(strings.Fields(strings.ToValidUTF8(t, "\uFFFD")), " ")
	t = strings.NewReplacer("<", "\uFF1C", ">", "\uFF1E").Replace(t)
	return clip(t, MaxTitle)
}

// mdEscape escapes what Markdown would read as markup: its punctuation
// with a backslash, and the characters HTML gives a meaning (&, <, >) as
// entities, which every Markdown renderer shows as the character.
var mdEscape = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;",
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`,
	"#", `\#`, "+", `\+`, "-", `\-`, "!", `\!`, "|", `\|`, "~", `\~`,
)

// Markdown renders plain text as Markdown: each line escaped and a
// paragraph of its own, each http(s) URL in it made a link, the first
// line bold; at most MaxDesp bytes, cut between characters.
func Markdown(text string) string {
	text = strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\n")
	// Escaping at most doubles a line, a link at most doubles its URL's
	// share, and markup adds little: half the budget for the text keeps
	// the result within it.
	text = clipBytes(text, MaxDesp/2-64)
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if i == 0 {
			b.WriteString("**" + mdEscape.Replace(line) + "**")
			continue
		}
		last := 0
		for _, m := range urlPattern.FindAllStringIndex(line, -1) {
			u := strings.TrimRight(line[m[0]:m[1]], ".,;:!?")
			m[1] = m[0] + len(u)
			if !link(u) {
				continue
			}
			b.WriteString(mdEscape.Replace(line[last:m[0]]))
			b.WriteString("[" + mdEscape.Replace(u) + "](" + u + ")")
			last = m[1]
		}
		b.WriteString(mdEscape.Replace(line[last:]))
	}
	return b.String()
}

// urlPattern finds what may be a URL in text: http(s):// and the
// printable ASCII after it, up to a space or any other character; the
// punctuation that ends a sentence is not part of it.
var urlPattern = regexp.MustCompile(`https?://[!-~]+`)

// link reports whether s is one absolute http(s) URL that can stand as a
// Markdown link target unescaped.
func link(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, "\"'<>()[]\\`")
}

// clip cuts s to at most n characters, ending with an ellipsis when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n-1; k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i] + "…"
}

// clipBytes cuts s to at most n bytes between characters, ending with an
// ellipsis when cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

type request struct {
	Title string `json:"title"`
	Desp  string `json:"desp"`
}

// Send posts d.Message as one message. A timeout or a dropped connection
// after the request went out is unknown: ServerChan has no idempotency key,
// so it is never sent again automatically.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	return s.conn.Send(d, 1, func() (delivery.Outcome, error) {
		title, desp := s.Render(d)
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(request{Title: title, Desp: desp}); err != nil {
			return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, nil
		}
		if out, ok := s.quota.Take(ctx, s.conn.Now()); !ok {
			return out, nil
		}
		return s.conn.Post(ctx, body.Bytes(), s.conn.Hook, Classify)
	})
}

// Classify maps a ServerChan answer to an outcome. Only HTTP 200 with code 0
// is completed:
//
//   - HTTP 401, 403 or 404 (no such key on that endpoint): failed
//     "bad_key", and the recipient is unreachable until the key is fixed.
//   - HTTP 429 (the caller's limit for 24 hours is used up): retry after
//     QuotaWait.
//   - HTTP 408 and 5xx: unknown, the message may have been taken.
//   - A non-zero code: failed with the code; the codes are not
//     documented, so none is taken to mean more.
func Classify(status int, raw []byte) delivery.Outcome {
	var a struct {
		Code *int `json:"code"`
		Data struct {
			PushID json.RawMessage `json:"pushid"`
		} `json:"data"`
	}
	parsed := json.Unmarshal(raw, &a) == nil && a.Code != nil
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_key", Unreachable: true}
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: QuotaWait, Reason: "rate_limited"}
	case status >= 500 || status == http.StatusRequestTimeout:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case status != http.StatusOK:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
	case !parsed:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case *a.Code == 0:
		return delivery.Outcome{Result: delivery.Completed}
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
