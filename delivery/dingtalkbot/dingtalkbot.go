// Package dingtalkbot is the delivery sink for DingTalk (钉钉) custom group
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
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/delivery/robot"
	"github.com/herald-bridge/herald/store"
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

// codes are the errcodes with a meaning of their own; any other non-zero
// errcode fails the push.
var codes = map[int]robot.Code{
	130101: {Reason: "rate_limited", TooFast: true},        // send too fast
	310000: {Reason: "bad_signature", BadCredential: true}, // sign, keyword or IP check failed
	300001: {Reason: "bad_token", BadCredential: true},     // invalid access token
	300005: {Reason: "bad_token", BadCredential: true},     // token does not exist
	460101: {Reason: "too_large"},                          // body over the limit
}

// ErrBadHook is returned by New for a hook URL that is not http(s).
var ErrBadHook = errors.New("dingtalkbot: hook url must be an http(s) url")

// Sink posts deliveries to one DingTalk robot.
type Sink struct {
	hook    string
	secret  string
	secrets []string
	client  *http.Client
	egress  egress.Options
	buckets store.Buckets
	pace    *robot.Pacer
	log     zerolog.Logger
	now     func() time.Time
}

var _ delivery.Sink = (*Sink)(nil)

// Option configures a Sink.
type Option func(*Sink)

// WithEgress sets the options of the guarded egress client (default:
// public destinations only, no redirects, robot.DefaultTimeout).
func WithEgress(o egress.Options) Option { return func(s *Sink) { s.egress = o } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(s *Sink) { s.log = l } }

// WithClock sets the clock for signing, pacing and relative times.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithBuckets paces the robot by a bucket in the store (default: no
// pacing; the robot's too-fast answer is still retried).
func WithBuckets(b store.Buckets) Option { return func(s *Sink) { s.buckets = b } }

// New returns a sink posting to hookURL, signing with secret (empty: the
// robot checks no signature).
func New(hookURL, secret string, opts ...Option) (*Sink, error) {
	u, err := url.Parse(hookURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, ErrBadHook
	}
	s := &Sink{hook: hookURL, secret: secret, secrets: robot.Secrets(hookURL, secret), log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.egress.Timeout <= 0 {
		s.egress.Timeout = robot.DefaultTimeout
	}
	s.client = egress.Client(s.egress)
	if s.buckets != nil {
		s.pace = robot.NewPacer(s.buckets, Kind, hookURL, s.now)
	}
	return s, nil
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
	if s.secret == "" {
		return s.hook
	}
	ts := strconv.FormatInt(s.now().UnixMilli(), 10)
	sep := "&"
	if !strings.Contains(s.hook, "?") {
		sep = "?"
	}
	return s.hook + sep + "timestamp=" + ts + "&sign=" + url.QueryEscape(Sign(ts, s.secret))
}

// jsonSize is how many bytes s takes inside a JSON string.
func jsonSize(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// Parts renders d's message as the markdown parts Send posts, with the
// title each part carries.
func (s *Sink) Parts(d delivery.Delivery) (title string, parts []string) {
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
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
	if d.To.Kind != Kind {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}
	}
	title, parts := s.Parts(d)
	if d.Part < 0 || d.Part >= len(parts) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part", Parts: len(parts)}
	}
	if len(parts) > 1 {
		title += " (" + strconv.Itoa(d.Part+1) + "/" + strconv.Itoa(len(parts)) + ")"
	}
	out, err := s.send(ctx, title, parts[d.Part])
	out.Parts = len(parts)
	ev := s.log.Debug()
	if out.Result != delivery.Completed {
		ev = s.log.Warn()
	}
	if err != nil {
		ev = ev.Str("error", robot.Redact(err, s.secrets))
	}
	ev.Str("recipient_kind", string(Kind)).Str("recipient", d.To.Redacted()).Int("part", d.Part).Int("parts", len(parts)).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg("dingtalk robot send")
	return out
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
	if out, ok := s.pace.Wait(ctx); !ok {
		return out, nil
	}
	// Signed after pacing, so the timestamp is the send's own.
	return robot.Post(ctx, s.client, s.signedURL(), body.Bytes(), codes)
}
