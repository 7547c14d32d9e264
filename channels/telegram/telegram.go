// Package telegram is herald's conversational Telegram channel: it takes
// updates by long polling (one replica at a time, under a lease) or by
// webhook, maps them to conversation messages, and answers through the Bot
// API with HTML text, inline keyboards and callback answers.
//
// An update is claimed in the dedup store (by update_id) before it is
// handled and acknowledged only after it was handled: in polling mode the
// offset confirmed to Telegram is the persisted high-water mark of handled
// updates, in webhook mode the 200 is written after handling. A restart
// therefore neither loses an update nor handles it twice; an update whose
// turn was interrupted mid-way stays claimed and is not replayed.
package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/perchat"
	sink "github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store"
)

// Modes of taking updates.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// WebhookPath is the route Telegram posts updates to, below the public URL.
const WebhookPath = "/telegram/webhook"

// PollerLease is the lease a replica holds while it polls.
const PollerLease = "telegram-poller"

// DedupTTL is how long a handled update_id is remembered. Telegram keeps
// unconfirmed updates for 24 h, so any repeat falls inside it.
const DedupTTL = 48 * time.Hour

// Defaults for the Options durations.
const (
	DefaultPollTimeout = 50 * time.Second // the server's own cap
	DefaultLeaseTTL    = 30 * time.Second
	DefaultBackoff     = time.Second
	MaxBackoff         = time.Minute
	callTimeout        = 20 * time.Second
	maxWebhookBody     = 1 << 20
)

// Sentinel errors.
var (
	ErrNoToken         = errors.New("telegram: bot token is empty")
	ErrNoHandler       = errors.New("telegram: no conversation handler")
	ErrNoStore         = errors.New("telegram: no store")
	ErrBadMode         = errors.New("telegram: mode must be polling or webhook")
	ErrBadURL          = errors.New("telegram: url must be absolute http(s)")
	ErrBadSecret       = errors.New("telegram: webhook secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	ErrNotTelegramChat = errors.New("telegram: not a telegram:chat:<id> address")
	ErrCallbackData    = errors.New("telegram: button callback data must be 1-64 bytes")
	ErrSend            = errors.New("telegram: send failed")
)

// Handler answers one conversation message.
type Handler interface {
	Handle(ctx context.Context, m conversation.Message) []conversation.Reply
}

// Options configures a Channel.
type Options struct {
	Token         string
	APIURL        string // default https://api.telegram.org
	Mode          string // polling (default) | webhook
	WebhookSecret string // required in webhook mode
	PublicURL     string // required in webhook mode: WebhookPath is appended
	Handler       Handler
	// Store provides Channels() for the persisted offset and the groups
	// that became supergroups, Dedup() for update ids and Leases() for the
	// poller lease.
	Store store.Store
	// Holder is this replica's id, the poller lease holder.
	Holder     string
	Log        zerolog.Logger
	HTTPClient *http.Client

	// PollTimeout is the long-poll wait (default DefaultPollTimeout).
	PollTimeout time.Duration
	// LeaseTTL is the poller lease's lifetime, renewed at a third of it
	// (default DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Backoff is the first wait after a failure; it doubles up to
	// MaxBackoff (default DefaultBackoff).
	Backoff time.Duration
}

var secretRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (o *Options) validate() error {
	var errs []error
	if strings.TrimSpace(o.Token) == "" {
		errs = append(errs, ErrNoToken)
	}
	if o.Handler == nil {
		errs = append(errs, ErrNoHandler)
	}
	if o.Store == nil {
		errs = append(errs, ErrNoStore)
	}
	if o.APIURL == "" {
		o.APIURL = "https://api.telegram.org"
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	if !absHTTP(o.APIURL) {
		errs = append(errs, fmt.Errorf("api_url: %w", ErrBadURL))
	}
	if o.Mode == "" {
		o.Mode = ModePolling
	}
	switch o.Mode {
	case ModePolling:
		if o.WebhookSecret != "" && !secretRe.MatchString(o.WebhookSecret) {
			errs = append(errs, ErrBadSecret)
		}
	case ModeWebhook:
		if !secretRe.MatchString(o.WebhookSecret) {
			errs = append(errs, ErrBadSecret)
		}
		if !absHTTP(o.PublicURL) {
			errs = append(errs, fmt.Errorf("public_url: %w", ErrBadURL))
		}
	default:
		errs = append(errs, ErrBadMode)
	}
	if o.Holder == "" {
		o.Holder = "herald-" + bot.RandomString(8)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = DefaultPollTimeout
	}
	if t := o.HTTPClient.Timeout; t > 0 && o.PollTimeout > t-5*time.Second {
		o.PollTimeout = max(t-5*time.Second, time.Second)
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	return errors.Join(errs...)
}

func absHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// Channel is the Telegram conversation channel.
type Channel struct {
	o     Options
	bot   *bot.Bot
	log   zerolog.Logger
	chats perchat.Line[int64]
	// migrated caches groups that became supergroups (old -> new id).
	migrated migrations

	idMu sync.Mutex
	me   identity // zero until getMe answered

	status atomic.Value // string

	// wait sleeps for d unless ctx ends first (tests replace it).
	wait func(ctx context.Context, d time.Duration) bool
}

var _ conversation.Sender = (*Channel)(nil)

// New checks o and returns a channel. It makes no request.
func New(o Options) (*Channel, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	b, err := sink.NewBot(o.Token, o.APIURL, o.PollTimeout, o.HTTPClient, o.Log,
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}))
	if err != nil {
		return nil, err
	}
	c := &Channel{o: o, bot: b, log: o.Log, wait: sleep}
	c.status.Store("starting")
	return c, nil
}

// Status reports what the channel is doing: "starting", "polling",
// "webhook", "retrying: <class>", "standby (another replica polls)" or
// "stopped".
func (c *Channel) Status() string { return c.status.Load().(string) }

func (c *Channel) setStatus(s string) {
	if c.status.Swap(s) != s {
		c.log.Info().Str("status", s).Msg("telegram channel")
	}
}

// identity returns the bot's identity, asking getMe once it is unknown.
func (c *Channel) identity(ctx context.Context) (identity, error) {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	if c.me.ID != 0 {
		return c.me, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	u, err := c.bot.GetMe(ctx)
	if err != nil {
		return identity{}, c.wrap("getMe", err)
	}
	c.me = identity{ID: u.ID, Username: u.Username}
	return c.me, nil
}

// secretOK compares the webhook secret header in constant time.
func (c *Channel) secretOK(got string) bool {
	if c.o.WebhookSecret == "" {
		return false
	}
	a := sha256.Sum256([]byte(got))
	b := sha256.Sum256([]byte(c.o.WebhookSecret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func (c *Channel) scrub(s string) string { return sink.Scrub(c.o.Token, s) }

// wrap turns a client error into one that names the call and never
// carries the token or a migration's new chat id, keeping the chain for
// errors.Is / errors.As.
func (c *Channel) wrap(call string, err error) error {
	text := err.Error()
	var mig *bot.MigrateError
	if errors.As(err, &mig) {
		text = mig.Message // without migrate_to_chat_id (I10)
	}
	return &apiError{msg: "telegram: " + call + ": " + c.scrub(text), err: err}
}

type apiError struct {
	msg string
	err error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }
