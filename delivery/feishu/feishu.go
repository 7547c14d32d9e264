// Package feishu is the delivery sink for Feishu (Lark) app bots: an
// interactive card sent with im/v1/messages to a chat or a user, carrying a
// uuid derived from the effect key so the platform deduplicates retries.
package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/render"
)

// Limits and defaults.
const (
	// MaxCard is the largest card content the message API accepts.
	MaxCard = 30 << 10
	// DefaultTimeout bounds one HTTP call.
	DefaultTimeout = 15 * time.Second
	// UUIDLen is the length of the dedup uuid sent with each message.
	UUIDLen = 48
)

// Platform codes the sink acts on.
const (
	codeRateLimited     = 99991400
	codeNoPermission    = 99991672
	codeBadReceiveID    = 230001
	codeBotNotInChat    = 230002
	codeOutOfScope      = 230013
	codeChatRateLimited = 230020
)

// ErrConfig is returned by New for missing or malformed settings.
var ErrConfig = errors.New("feishu: invalid configuration")

// Sink sends deliveries through one Feishu app bot.
type Sink struct {
	lark   *lark.Client
	tokens *TokenSource
	log    zerolog.Logger
	now    func() time.Time
	secret string
}

var (
	_ delivery.Sink          = (*Sink)(nil)
	_ delivery.Deduplicating = (*Sink)(nil)
)

type config struct {
	client *http.Client
	tokens *TokenSource
	log    zerolog.Logger
	now    func() time.Time
}

// Option configures a Sink.
type Option func(*config)

// WithHTTPClient sets the HTTP client for the message calls, and for the
// token calls of a sink without WithTokenSource (default: one with
// DefaultTimeout).
func WithHTTPClient(c *http.Client) Option { return func(o *config) { o.client = c } }

// WithTokenSource makes the sink use ts, the app's one token source, which
// the chat channel of the same app shares; New refuses a source of another
// app. Without it the sink keeps a source of its own.
func WithTokenSource(ts *TokenSource) Option { return func(o *config) { o.tokens = ts } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(o *config) { o.log = l } }

// WithClock sets the clock for token expiry and relative times.
func WithClock(now func() time.Time) Option { return func(o *config) { o.now = now } }

// New returns a sink for the app appID/appSecret on the open platform at
// baseURL (empty: Feishu, https://open.feishu.cn). It makes no request.
func New(appID, appSecret, baseURL string, opts ...Option) (*Sink, error) {
	if appID == "" || appSecret == "" {
		return nil, fmt.Errorf("%w: app_id and app_secret are required", ErrConfig)
	}
	if baseURL == "" {
		baseURL = lark.FeishuBaseUrl
	}
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%w: base url must be an http(s) url", ErrConfig)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	c := config{log: zerolog.Nop(), now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: DefaultTimeout}
	}
	if c.tokens == nil {
		c.tokens = NewTokenSource(appID, appSecret, baseURL, c.client, c.now)
	} else if !c.tokens.For(appID, baseURL) {
		return nil, fmt.Errorf("%w: the token source belongs to another app", ErrConfig)
	}
	s := &Sink{
		tokens: c.tokens,
		log:    c.log,
		now:    c.now,
		secret: appSecret,
	}
	s.lark = lark.NewClient(appID, appSecret,
		lark.WithOpenBaseUrl(baseURL),
		lark.WithEnableTokenCache(false),
		lark.WithHttpClient(tracingClient{c.client}),
		lark.WithLogger(sdkLogger{s}),
		lark.WithLogLevel(larkcore.LogLevelError),
	)
	return s, nil
}

// Dedups reports that the platform deduplicates by the message uuid (for
// one hour), so an unknown outcome may be retried. The uuid derives from
// Delivery.Key, which the dispatcher always sets.
func (s *Sink) Dedups(delivery.Address) bool { return true }

// DedupWindow is how long Feishu drops a repeated uuid.
func (s *Sink) DedupWindow() time.Duration { return time.Hour }

// UUID derives the message uuid for part of the delivery with key: stable
// across attempts, at most 50 characters.
func UUID(key string, part int) string {
	sum := sha256.Sum256([]byte(key + "\x00" + strconv.Itoa(part)))
	return hex.EncodeToString(sum[:])[:UUIDLen]
}

// Send sends d.Message as one interactive card to d.To and classifies the
// answer. The message renders relative to its OccurredAt (or now).
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	out, detail := s.send(ctx, d)
	ev := s.log.Debug()
	if out.Result != delivery.Completed {
		ev = s.log.Warn()
	}
	if detail != "" {
		// Platform messages may quote the receive id (I10).
		if d.To.ID != "" {
			detail = strings.ReplaceAll(detail, d.To.ID, "…")
		}
		ev = ev.Str("error", s.scrub(detail))
	}
	ev.Str("recipient_kind", string(delivery.FeishuChat)).Str("id_type", d.To.IDType).
		Stringer("result", out.Result).Str("reason", out.Reason).Msg("feishu send")
	return out
}

// send does the work of Send and returns a loggable detail besides the
// outcome.
func (s *Sink) send(ctx context.Context, d delivery.Delivery) (delivery.Outcome, string) {
	idType, ok := receiveIDType(d.To)
	if !ok {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}, ""
	}
	if d.Part != 0 {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part"}, ""
	}
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	card, err := render.FeishuCard(d.Message, d.Lang, d.Zone, at)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}, err.Error()
	}
	if len(card) > MaxCard {
		return delivery.Outcome{Result: delivery.Failed, Reason: "too_large"}, ""
	}

	body := larkim.NewCreateMessageReqBodyBuilder().
		ReceiveId(d.To.ID).
		MsgType(larkim.MsgTypeInteractive).
		Content(string(card))
	if d.Key != "" {
		// Without a key there is nothing to deduplicate by; a constant
		// uuid would swallow unrelated messages.
		body = body.Uuid(UUID(d.Key, d.Part))
	}
	req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(idType).Body(body.Build()).Build()

	// A token the platform refuses is dropped and the call made once more
	// with a fresh one: the refusal happened at the gate, so nothing was
	// sent. A second refusal is left to the dispatcher's retry.
	for attempt := 0; ; attempt++ {
		tok, err := s.tokens.Token(ctx)
		if err != nil {
			return classifyTokenError(err), err.Error()
		}
		tr := &trace{}
		resp, err := s.lark.Im.V1.Message.Create(withTrace(ctx, tr), req, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return classifyCallError(tr, err), err.Error()
		}
		if resp.Success() {
			id := ""
			if resp.Data != nil && resp.Data.MessageId != nil {
				id = *resp.Data.MessageId
			}
			return delivery.Outcome{Result: delivery.Completed, ProviderID: id}, ""
		}
		if IsTokenInvalid(resp.Code) {
			s.tokens.Drop(tok)
			if attempt == 0 {
				continue
			}
		}
		out := classifyCode(resp.StatusCode, resp.Header, resp.Code)
		return out, fmt.Sprintf("code %d: %s (log id %s)", resp.Code, resp.Msg, resp.RequestId())
	}
}

func receiveIDType(a delivery.Address) (string, bool) {
	if a.Kind != delivery.FeishuChat || a.ID == "" {
		return "", false
	}
	switch a.IDType {
	case address.ChatID, "":
		return larkim.ReceiveIdTypeChatId, true
	case address.OpenID:
		return larkim.ReceiveIdTypeOpenId, true
	}
	return "", false
}

// classifyCode maps a platform error answer to an outcome.
func classifyCode(status int, h http.Header, code int) delivery.Outcome {
	switch {
	case IsTokenInvalid(code):
		// Refused at the gate: nothing was sent. The token is dropped and
		// the next attempt fetches a new one.
		return delivery.Outcome{Result: delivery.RetryAfter, After: time.Second, Reason: "token_invalid"}
	case code == codeRateLimited || code == codeChatRateLimited || status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: resetAfter(h), Reason: "rate_limited"}
	case code == codeBotNotInChat:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bot_not_in_chat", Unreachable: true}
	case code == codeOutOfScope:
		return delivery.Outcome{Result: delivery.Failed, Reason: "out_of_scope", Unreachable: true}
	case code == codeNoPermission:
		return delivery.Outcome{Result: delivery.Failed, Reason: "no_permission"}
	case code == codeBadReceiveID:
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_recipient"}
	case status >= 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(code)}
}

// resetAfter reads x-ogw-ratelimit-reset (seconds), defaulting to 1 s.
func resetAfter(h http.Header) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("x-ogw-ratelimit-reset"))); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return time.Second
}

func classifyTokenError(err error) delivery.Outcome {
	if errors.Is(err, ErrTokenRejected) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "credentials_rejected"}
	}
	// No message was sent without a token, whatever became of the token call.
	out := delivery.Outcome{Result: delivery.RetryAfter, After: 5 * time.Second, Reason: "token_unavailable"}
	if errors.Is(err, context.Canceled) {
		out.Reason = "canceled"
	}
	return out
}

// classifyCallError classifies an error from the SDK call, using what the
// trace saw on the wire.
func classifyCallError(tr *trace, err error) delivery.Outcome {
	tr.mu.Lock()
	calls, terr, status := tr.calls, tr.err, tr.status
	tr.mu.Unlock()
	switch {
	case calls == 0:
		// The SDK refused before any request (validation).
		return delivery.Outcome{Result: delivery.Failed, Reason: "client_error"}
	case terr != nil:
		return delivery.ClassifyTransport(terr)
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: resetAfter(tr.header), Reason: "rate_limited"}
	case status >= 500:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case status >= 400:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
	}
	return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
}

// scrub removes the app secret from s. Tokens never reach error strings:
// they travel only in the Authorization header.
func (s *Sink) scrub(str string) string {
	return strings.ReplaceAll(str, s.secret, "…")
}

// trace records what happened on the wire during one SDK call.
type trace struct {
	mu     sync.Mutex
	calls  int
	err    error
	status int
	header http.Header
}

type traceKey struct{}

func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// tracingClient is the SDK's HTTP client: it records the raw transport
// error and status, which the SDK otherwise flattens into strings.
type tracingClient struct{ c *http.Client }

var _ larkcore.HttpClient = tracingClient{}

func (tc tracingClient) Do(r *http.Request) (*http.Response, error) {
	t, _ := r.Context().Value(traceKey{}).(*trace)
	if t == nil {
		return tc.c.Do(r)
	}
	resp, err := tc.c.Do(r)
	t.mu.Lock()
	t.calls++
	t.err = err
	if resp != nil {
		t.status, t.header = resp.StatusCode, resp.Header
	}
	t.mu.Unlock()
	return resp, err
}

// sdkLogger sends the SDK's own log lines to the sink's logger at debug.
type sdkLogger struct{ s *Sink }

func (l sdkLogger) line(args []any) string { return l.s.scrub(fmt.Sprint(args...)) }

func (l sdkLogger) Debug(_ context.Context, args ...any) {
	l.s.log.Debug().Str("sdk", l.line(args)).Msg("feishu sdk")
}
func (l sdkLogger) Info(_ context.Context, args ...any) {
	l.s.log.Debug().Str("sdk", l.line(args)).Msg("feishu sdk")
}
func (l sdkLogger) Warn(_ context.Context, args ...any) {
	l.s.log.Debug().Str("sdk", l.line(args)).Msg("feishu sdk")
}
func (l sdkLogger) Error(_ context.Context, args ...any) {
	l.s.log.Debug().Str("sdk", l.line(args)).Msg("feishu sdk")
}
