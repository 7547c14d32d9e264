// Package feishu is the conversational Feishu (Lark) channel: it receives
// chat messages and card button presses from a self-built app, either over
// the platform's long connection (websocket mode) or as signed, optionally
// encrypted HTTP events (webhook mode), hands them to the conversation core
// one at a time per chat, and sends the answers with im/v1/messages.
//
// Mapping: im.message.receive_v1 text messages from users in p2p and group
// chats become conversation.Message{Channel: "feishu"} with Principal
// "feishu:<open_id>" and Chat "feishu:chat:<chat_id>" (p2p chats too, so
// replies land where the user wrote). @-mentions are resolved from the
// event's mentions: the bot's own mention is removed, others become
// "@Name". In groups only messages that mention the bot are passed on
// (Addressed); the rest are dropped here. Lang is "zh" when the text holds
// Han characters, "en" when it is clearly English prose (at least two
// plain words besides commands, URLs and mentions), otherwise
// Options.DefaultLang; left empty (the default), the conversation core
// decides: the chat's remembered language, else herald's configured one.
// card.action.trigger presses become Message{Button} in the chat the card
// sits in; the press is answered within the platform's 3 s with the reply's
// toast and, for a Reply with Edit, the card replaced by the decision.
//
// Every event id and message id is marked in the shared store.Dedup before
// the platform gets its 200, so a re-push (to this or another replica) is
// handled once. Handling is asynchronous after that mark: a crash between
// the answer and the turn loses the turn rather than repeating it.
package feishu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	sink "github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/store"
)

// Modes.
const (
	ModeWebsocket = "websocket"
	ModeWebhook   = "webhook"
)

// Defaults and bounds.
const (
	// DefaultTimeout bounds one HTTP call to the platform.
	DefaultTimeout = 15 * time.Second
	// DedupTTL is how long event and message ids are remembered; the
	// platform re-pushes for a few hours at most.
	DedupTTL = 24 * time.Hour
	// MaxEventBody is the largest event body read.
	MaxEventBody = 1 << 20
	// MaxQueue is the most turns waiting per chat; beyond it new ones are
	// dropped (and logged).
	MaxQueue = 64
	// CardWait is how long a card press waits for its turn before the
	// platform is answered without an update (it allows 3 s); the answers
	// then follow as messages.
	CardWait = 2500 * time.Millisecond
	// DrainTimeout is how long Run waits for queued turns after its
	// context ends before cancelling them.
	DrainTimeout = 5 * time.Second
)

// Dedup namespaces in store.Dedup.
const (
	nsEvent   = "feishu.event"
	nsMessage = "feishu.message"
)

// ErrConfig is returned by New for missing or malformed options.
var ErrConfig = errors.New("feishu channel: invalid configuration")

// ErrClosed is returned for events that arrive after Run has ended.
var ErrClosed = errors.New("feishu channel: closed")

// Handler answers one conversation turn. *conversation.Core implements it.
type Handler interface {
	Handle(ctx context.Context, m conversation.Message) []conversation.Reply
}

// Options configures a Channel.
type Options struct {
	AppID, AppSecret string
	// Mode is websocket (default) or webhook.
	Mode string
	// VerificationToken is checked on every webhook event (required in
	// webhook mode). EncryptKey, when set, makes the signature check and
	// decryption mandatory.
	VerificationToken, EncryptKey string
	// BaseURL is the open platform (default https://open.feishu.cn).
	BaseURL string
	// DefaultLang is the language of text turns whose text does not tell
	// (commands only): en | zh, or empty to leave it to the conversation
	// core (the chat's remembered language, else the configured one).
	// Button presses never get it: the core answers them in the
	// presser's pinned or last-used language.
	DefaultLang string
	Handler     Handler
	// Store provides Dedup for event and message ids, shared by replicas.
	Store store.Store
	Log   zerolog.Logger
	// HTTPClient is used for the bot-info and message calls, and for the
	// token calls when Tokens is nil (default: one with DefaultTimeout).
	HTTPClient *http.Client
	// Tokens is the app's one tenant token source, shared with the
	// delivery sink of the same app so both use one token and one refresh
	// schedule (nil: the channel keeps its own). It must belong to AppID
	// on BaseURL.
	Tokens *sink.TokenSource
	// Now is the clock for signature freshness, and for token expiry when
	// Tokens is nil (default time.Now).
	Now func() time.Time
	// LongConn, when set, is the route of the long connection (SPEC §17).
	LongConn *LongConn
}

// LongConn is how the long connection reaches the platform: the
// transport of its endpoint request and the dialer of its websocket.
// The SDK's long-connection client takes neither as an option; it uses
// the process's default HTTP client and websocket dialer, so the channel
// sets those before it connects. Nothing else in herald uses them.
type LongConn struct {
	Transport http.RoundTripper
	Dial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (o *Options) validate() error {
	var errs []error
	if o.AppID == "" || o.AppSecret == "" {
		errs = append(errs, errors.New("app_id and app_secret are required"))
	}
	switch o.Mode {
	case "":
		o.Mode = ModeWebsocket
	case ModeWebsocket, ModeWebhook:
	default:
		errs = append(errs, fmt.Errorf("mode %q: want websocket or webhook", o.Mode))
	}
	if o.Mode == ModeWebhook && o.VerificationToken == "" {
		errs = append(errs, errors.New("webhook mode needs verification_token"))
	}
	if o.BaseURL == "" {
		o.BaseURL = lark.FeishuBaseUrl
	}
	if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, errors.New("base_url must be an http(s) url"))
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	switch o.DefaultLang {
	case "", "zh", "en":
	default:
		errs = append(errs, fmt.Errorf("default language %q: want en or zh", o.DefaultLang))
	}
	if o.Handler == nil {
		errs = append(errs, errors.New("a handler is required"))
	}
	if o.Store == nil {
		errs = append(errs, errors.New("a store is required"))
	}
	if o.Tokens != nil && !o.Tokens.For(o.AppID, o.BaseURL) {
		errs = append(errs, errors.New("the token source belongs to another app"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Channel is one Feishu app's conversational side.
type Channel struct {
	o      Options
	log    zerolog.Logger
	lark   *lark.Client
	tokens *sink.TokenSource
	bot    *botInfo
	chats  *chats

	// ctx is the context turns run under; cancelled when Run gives up
	// draining.
	ctx    context.Context
	cancel context.CancelFunc

	// gate: events hold it shared between their dedup mark and their
	// enqueue, so shutdown (which takes it exclusively) never strands a
	// marked event.
	gate   sync.RWMutex
	closed bool

	status atomic.Value // string; "" until Run

	cardWait time.Duration
}

var (
	_ conversation.Sender = (*Channel)(nil)
	_ Handler             = (*conversation.Core)(nil)
)

// New checks o and returns a channel. It makes no request.
func New(o Options) (*Channel, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &Channel{o: o, log: o.Log.With().Str("channel", "feishu").Logger(), cardWait: CardWait}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.tokens = o.Tokens
	if c.tokens == nil {
		c.tokens = sink.NewTokenSource(o.AppID, o.AppSecret, o.BaseURL, o.HTTPClient, o.Now)
	}
	c.bot = &botInfo{}
	c.chats = newChats(c.ctx, c.turn, c.log)
	c.lark = lark.NewClient(o.AppID, o.AppSecret,
		lark.WithOpenBaseUrl(o.BaseURL),
		lark.WithEnableTokenCache(false),
		lark.WithHttpClient(o.HTTPClient),
		lark.WithLogger(sdkLogger{c: c}),
		lark.WithLogLevel(larkcore.LogLevelError),
	)
	c.setStatus("starting")
	if o.Mode == ModeWebhook {
		c.setStatus("on (webhook)")
	}
	return c, nil
}

// Run runs the channel until ctx ends. In websocket mode it keeps the
// platform's long connection up; in webhook mode events arrive through
// EventHandler and Run only waits. When ctx ends, Run stops taking events,
// lets queued turns finish for up to DrainTimeout, cancels the rest and
// returns nil.
func (c *Channel) Run(ctx context.Context) error {
	if c.o.Mode == ModeWebsocket {
		c.runWS(ctx)
	} else {
		<-ctx.Done()
	}
	c.shutdown()
	return nil
}

// shutdown refuses further events, drains the chat queues and cancels
// what is left.
func (c *Channel) shutdown() {
	c.gate.Lock()
	c.closed = true
	c.gate.Unlock()
	c.setStatus("stopped")
	drained := make(chan struct{})
	go func() {
		c.chats.wait()
		close(drained)
	}()
	t := time.NewTimer(DrainTimeout)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
		c.log.Warn().Msg("feishu turns still running at shutdown; cancelling them")
	}
	c.cancel()
	<-drained
}

// Status is a short state for readiness and the admin API.
func (c *Channel) Status() string {
	s, _ := c.status.Load().(string)
	return s
}

func (c *Channel) setStatus(s string) { c.status.Store(s) }

// scrub removes the app's secrets from s.
func (c *Channel) scrub(s string) string {
	for _, sec := range []string{c.o.AppSecret, c.o.EncryptKey, c.o.VerificationToken} {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	return scrubQuery(s)
}

// scrubQuery cuts the query off every URL in s: the long connection's
// address carries its access ticket there.
func scrubQuery(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexAny(s[i:], "? \t\n]")
		if j < 0 || s[i+j] != '?' {
			end := len(s)
			if j >= 0 {
				end = i + j
			}
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		b.WriteString(s[:i+j])
		b.WriteString("?…")
		rest := s[i+j:]
		k := strings.IndexAny(rest, " \t\n]")
		if k < 0 {
			return b.String()
		}
		s = rest[k:]
	}
}

// sdkLogger sends the SDK's log lines to the channel's logger, scrubbed,
// and follows the long connection's state from them.
type sdkLogger struct{ c *Channel }

var _ larkcore.Logger = sdkLogger{}

func (l sdkLogger) line(args []any) string { return l.c.scrub(fmt.Sprint(args...)) }

// Debug drops the line: the SDK's debug lines quote whole events, with
// user ids and message text.
func (l sdkLogger) Debug(context.Context, ...any) {}

func (l sdkLogger) Info(_ context.Context, args ...any) {
	s := l.line(args)
	switch {
	case strings.HasPrefix(s, "connected to"):
		l.c.setStatus("on (websocket)")
	case strings.HasPrefix(s, "disconnected"), strings.HasPrefix(s, "trying to reconnect"):
		l.c.setStatus("reconnecting")
	}
	l.c.log.Debug().Str("sdk", s).Msg("feishu sdk")
}

func (l sdkLogger) Warn(_ context.Context, args ...any) {
	l.c.log.Info().Str("sdk", l.line(args)).Msg("feishu sdk")
}

func (l sdkLogger) Error(_ context.Context, args ...any) {
	l.c.log.Warn().Str("sdk", l.line(args)).Msg("feishu sdk")
}
