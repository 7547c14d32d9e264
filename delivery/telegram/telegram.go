// Package telegram is the delivery sink for Telegram chats and forum
// topics: sendMessage in HTML parse mode through go-telegram/bot, paced
// per chat, per group and per bot, with each API answer classified for
// the dispatcher.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/render"
)

// DefaultTimeout bounds one sendMessage call.
const DefaultTimeout = 15 * time.Second

// Sentinel errors from New.
var (
	ErrNoToken = errors.New("telegram: bot token is empty")
	ErrBadURL  = errors.New("telegram: api url must be http(s)")
	errNotChat = errors.New("not a telegram chat address")
	errBadChat = errors.New("telegram chat id is not an integer")
)

// generalTopic is a forum's General topic. The Bot API refuses its id in
// message_thread_id ("message thread not found"): posting there means
// leaving the field out.
const generalTopic = 1

// Sink sends deliveries to Telegram chats.
type Sink struct {
	bot   *bot.Bot
	token string
	log   zerolog.Logger
	pace  *pacer
	now   func() time.Time
}

var _ delivery.Sink = (*Sink)(nil)

type config struct {
	client *http.Client
	log    zerolog.Logger
	limits Limits
	now    func() time.Time
}

// Option configures a Sink.
type Option func(*config)

// WithHTTPClient sets the HTTP client (default: one with DefaultTimeout).
func WithHTTPClient(c *http.Client) Option { return func(o *config) { o.client = c } }

// WithLogger sets the logger (default: none).
func WithLogger(l zerolog.Logger) Option { return func(o *config) { o.log = l } }

// WithLimits overrides the pacing limits (default DefaultLimits).
func WithLimits(l Limits) Option { return func(o *config) { o.limits = l } }

// WithClock sets the clock used to render relative times (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *config) { o.now = now } }

// New returns a sink for the bot with token, talking to apiURL (empty: the
// public Bot API). It makes no request: no getMe, no polling.
func New(token, apiURL string, opts ...Option) (*Sink, error) {
	if strings.TrimSpace(token) == "" {
		return nil, ErrNoToken
	}
	if apiURL == "" {
		apiURL = "https://api.telegram.org"
	}
	if !strings.HasPrefix(apiURL, "https://") && !strings.HasPrefix(apiURL, "http://") {
		return nil, ErrBadURL
	}
	c := config{log: zerolog.Nop(), limits: DefaultLimits, now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: DefaultTimeout}
	}
	b, err := NewBot(token, strings.TrimRight(apiURL, "/"), c.client.Timeout, c.client, c.log)
	if err != nil {
		return nil, err
	}
	return &Sink{bot: b, token: token, log: c.log, pace: newPacer(c.limits), now: c.now}, nil
}

// NewBot returns a Bot API client for token at apiURL, for the sink and
// the chat channel alike: it asks nothing at start (no getMe), polls for
// at most pollTimeout, and logs its errors to log at debug level; neither
// the log nor its error carries the token. opts add to that.
func NewBot(token, apiURL string, pollTimeout time.Duration, client *http.Client, log zerolog.Logger, opts ...bot.Option) (*bot.Bot, error) {
	opts = append([]bot.Option{
		bot.WithServerURL(apiURL),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(pollTimeout, client),
		bot.WithErrorsHandler(func(err error) {
			log.Debug().Str("error", Scrub(token, err.Error())).Msg("telegram client")
		}),
	}, opts...)
	b, err := bot.New(token, opts...)
	if err != nil {
		return nil, fmt.Errorf("telegram: %s", Scrub(token, err.Error()))
	}
	return b, nil
}

// Scrub removes the bot token from s.
func Scrub(token, s string) string {
	return strings.ReplaceAll(s, token, "<token>")
}

// Send sends part d.Part of d.Message to the chat or forum topic d.To
// and classifies the answer. A closed or missing topic fails with its
// reason; nothing falls back to the General topic. The message renders relative to its OccurredAt (or now), so
// every attempt at a part sees the same split.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	chat, thread, err := chatID(d.To)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_address"}
	}
	at := d.Message.OccurredAt
	if at.IsZero() {
		at = s.now()
	}
	parts := render.TelegramHTML(d.Message, d.Lang, d.Zone, at)
	if d.Part < 0 || d.Part >= len(parts) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_part", Parts: len(parts)}
	}
	out := s.send(ctx, chat, thread, parts[d.Part])
	var mig *bot.MigrateError
	if errors.As(out.err, &mig) {
		// The group became a supergroup: follow it once. Only a
		// supergroup has topics, so a basic group's address has none.
		to := int64(mig.MigrateToChatID)
		out = s.send(ctx, to, 0, parts[d.Part])
		out.MigratedTo = address.TelegramChat(to)
		if errors.As(out.err, &mig) {
			out.Outcome = delivery.Outcome{Result: delivery.Failed, Reason: "migrated_twice", MigratedTo: out.MigratedTo}
		}
	}
	out.Parts = len(parts)
	ev := s.log.Debug()
	if out.Result != delivery.Completed {
		ev = s.log.Warn()
		// Only transport errors are logged verbatim: API answers are
		// summarised by the reason and may quote recipient ids.
		var uerr *url.Error
		if errors.As(out.err, &uerr) {
			ev = ev.Str("error", s.scrub(out.err.Error()))
		}
	}
	ev.Str("recipient_kind", string(delivery.TelegramChat)).Bool("topic", thread != 0).Int("part", d.Part).Int("parts", len(parts)).
		Stringer("result", out.Result).Str("reason", out.Reason).Bool("migrated", out.MigratedTo != "").
		Msg("telegram send")
	return out.Outcome
}

// attempt is an outcome with the error behind it, for logging.
type attempt struct {
	delivery.Outcome
	err error
}

// send sends text to chat, in forum topic thread when it is not 0.
func (s *Sink) send(ctx context.Context, chat int64, thread int, text string) attempt {
	if err := s.pace.wait(ctx, chat); err != nil {
		// Nothing was sent yet.
		var paced *pacedError
		if errors.As(err, &paced) {
			return attempt{delivery.Outcome{Result: delivery.RetryAfter, After: paced.wait, Reason: "paced"}, nil}
		}
		return attempt{delivery.Outcome{Result: delivery.RetryAfter, After: time.Second, Reason: "canceled"}, err}
	}
	msg, err := s.bot.SendMessage(ctx, &bot.SendMessageParams{
		ChatID:             chat,
		Text:               text,
		ParseMode:          models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		MessageThreadID:    thread,
	})
	if err != nil {
		return attempt{Classify(err), err}
	}
	return attempt{delivery.Outcome{Result: delivery.Completed, ProviderID: strconv.Itoa(msg.ID)}, nil}
}

// chatID returns the chat of a and the thread to send in: 0 for the
// whole chat and for the General topic.
func chatID(a delivery.Address) (int64, int, error) {
	if a.Kind != delivery.TelegramChat {
		return 0, 0, errNotChat
	}
	id, err := strconv.ParseInt(a.ID, 10, 64)
	if err != nil {
		return 0, 0, errBadChat
	}
	if a.Topic == "" {
		return id, 0, nil
	}
	thread, err := strconv.Atoi(a.Topic)
	if err != nil || thread <= 0 {
		return 0, 0, errBadChat
	}
	if thread == generalTopic {
		thread = 0
	}
	return id, thread, nil
}

func (s *Sink) scrub(str string) string { return Scrub(s.token, str) }

// otherCode matches the library's error for codes it has no sentinel for.
var otherCode = regexp.MustCompile(`error response from telegram for method \w+, (\d+) `)

// Classify maps an error from go-telegram/bot to an outcome. A MigrateError
// classifies as Failed; Send follows migrations before classifying.
func Classify(err error) delivery.Outcome {
	var tooMany *bot.TooManyRequestsError
	var mig *bot.MigrateError
	switch {
	case err == nil:
		return delivery.Outcome{Result: delivery.Completed}
	case errors.As(err, &tooMany):
		after := time.Duration(tooMany.RetryAfter) * time.Second
		if after <= 0 {
			after = time.Second
		}
		return delivery.Outcome{Result: delivery.RetryAfter, After: after, Reason: "rate_limited"}
	case errors.As(err, &mig):
		return delivery.Outcome{Result: delivery.Failed, Reason: "migrated"}
	case errors.Is(err, bot.ErrorForbidden):
		reason := forbiddenReason(err.Error())
		// Blocked, kicked, a deleted account or chat: the chat takes
		// nothing until someone acts, so it is disabled (Gone).
		return delivery.Outcome{Result: delivery.Failed, Reason: reason, Unreachable: true, Gone: reason != "forbidden"}
	case errors.Is(err, bot.ErrorBadRequest):
		desc := strings.ToLower(err.Error())
		switch {
		case strings.Contains(desc, "chat not found"):
			return delivery.Outcome{Result: delivery.Failed, Reason: "chat_not_found", Unreachable: true}
		case strings.Contains(desc, "topic_closed"):
			// A closed topic refuses until someone reopens it; herald
			// does not reopen it, nor post to General instead.
			return delivery.Outcome{Result: delivery.Failed, Reason: "topic_closed", Unreachable: true}
		case strings.Contains(desc, "message thread not found"):
			// A wrong or deleted topic, or a group with topics turned off.
			return delivery.Outcome{Result: delivery.Failed, Reason: "topic_not_found", Unreachable: true}
		}
		return delivery.Outcome{Result: delivery.Failed, Reason: "bad_request"}
	case errors.Is(err, bot.ErrorUnauthorized):
		return delivery.Outcome{Result: delivery.Failed, Reason: "unauthorized"}
	case errors.Is(err, bot.ErrorNotFound):
		// The Bot API answers 404 for an unknown token.
		return delivery.Outcome{Result: delivery.Failed, Reason: "not_found"}
	case errors.Is(err, bot.ErrorConflict):
		return delivery.Outcome{Result: delivery.Failed, Reason: "conflict"}
	}
	if m := otherCode.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		if code >= 500 {
			return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + m[1]}
		}
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + m[1]}
	}
	out := delivery.ClassifyTransport(err)
	if out.Reason == delivery.ReasonConnLost && strings.Contains(err.Error(), "error decode response body") {
		// The request went through; Telegram's answer was unreadable.
		out.Reason = "bad_response"
	}
	return out
}

func forbiddenReason(desc string) string {
	d := strings.ToLower(desc)
	switch {
	case strings.Contains(d, "blocked"):
		return "blocked"
	case strings.Contains(d, "kicked"):
		return "kicked"
	case strings.Contains(d, "deactivated"):
		return "deactivated"
	case strings.Contains(d, "deleted"):
		return "chat_deleted"
	}
	return "forbidden"
}
