package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation/chatlimit"
	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/conversation/perchat"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks"
)

// Tasks is the part of the task manager the conversation uses; every
// decision (policy, scope, state) is the manager's.
type Tasks interface {
	Submit(ctx context.Context, s tasks.Submission) (*tasks.Task, error)
	Approve(ctx context.Context, who, id string) (*tasks.Task, error)
	Reject(ctx context.Context, who, id, reason string) (*tasks.Task, error)
	Pause(ctx context.Context, who, id string) (*tasks.Task, error)
	Resume(ctx context.Context, who, id string) (*tasks.Task, error)
	Delete(ctx context.Context, who, id string) (*tasks.Task, error)
	RunNow(ctx context.Context, who, id string) (tasks.RunRecord, error)
	List(ctx context.Context, who string) ([]*tasks.Task, error)
	Get(ctx context.Context, id string) (*tasks.Task, error)
	Runs(ctx context.Context, id string, limit int) ([]tasks.RunRecord, error)
	// Next says when a task is checked next and why then (SPEC §18).
	Next(t *tasks.Task) tasks.NextCheck
	Subscribe() (<-chan tasks.Change, func())
	Policy() tasks.Policy
}

// TokenIssuer issues inbox API tokens (webhook.InboxTokens).
type TokenIssuer interface {
	Issue(ctx context.Context, principal string) (string, error)
}

var _ Tasks = (*tasks.Manager)(nil)

// Dedup windows.
const (
	// MessageWindow is how long a message id is remembered: a channel that
	// redelivers an update within it gets no second answer.
	MessageWindow = 24 * time.Hour
	// DialogTTL is how long a follow-up question waits for its answer.
	DialogTTL = 10 * time.Minute
	// noticeWindow is how long an approval prompt or decision notice is
	// remembered as sent.
	noticeWindow = 30 * 24 * time.Hour
)

// Options configure a Core.
type Options struct {
	Tasks  Tasks
	Store  store.Store      // Dialogs() for dialog state, Dedup() for message ids, Inbox()
	Prefs  *chatprefs.Store // /mute, /quiet and the chat's language; default: over Store.Channels()
	Tokens TokenIssuer      // /inbox token; nil: not offered
	// Credentials keeps the course-site tokens people give in chat
	// (default: over Store.Channels()).
	Credentials *credentials.Store
	// Zone is the default zone for schedules and shown times (default UTC).
	Zone *time.Location
	// Lang is the reply language when a chat has none: "en" (default) or "zh".
	Lang string
	// BotName is our own username (/cmd@BotName); "" accepts any.
	BotName string
	// Assistant reads plain-language text (docs/chat.md, Assistant); nil: such text gets
	// the short help answer. SetAssistant changes it on reload.
	Assistant Assistant
	// AssistantPerHour bounds the asks one principal may put to the
	// assistant in an hour (default DefaultAssistantPerHour).
	AssistantPerHour int
	// ChatPerMinute and ChatBurst bound the messages one principal has
	// answered (defaults chatlimit.DefaultPerMinute, DefaultBurst): past
	// them the principal hears once that it is over the limit, then
	// nothing until it lifts. SetChatRate changes them on reload.
	ChatPerMinute, ChatBurst int
	// Memory keeps the conversation history (/history, /forget); nil:
	// nothing is kept and those commands say so.
	Memory *memory.Keeper
	Log    zerolog.Logger
	Now    func() time.Time

	// Importer imports the bundles and OPML files people send in a
	// private chat; nil: such files get a plain "cannot" answer.
	Importer Importer

	// Trier fetches a requested source once before the request is made
	// (docs/chat.md, What a request is told); nil: requests are not tried.
	Trier Trier
}

func (o *Options) validate() error {
	if o.Tasks == nil {
		return errors.New("conversation: Options.Tasks is required")
	}
	if o.Store == nil {
		return errors.New("conversation: Options.Store is required")
	}
	if o.Zone == nil {
		o.Zone = time.UTC
	}
	if o.Prefs == nil {
		o.Prefs = &chatprefs.Store{KV: o.Store.Channels(), Zone: o.Zone}
	}
	if o.Credentials == nil {
		o.Credentials = credentials.New(o.Store.Channels())
	}
	switch o.Lang {
	case "":
		o.Lang = "en"
	case "en", "zh":
	default:
		return fmt.Errorf("conversation: language %q: want en or zh", o.Lang)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Core turns chat messages into manager calls and answers. It is shared
// by every channel; each channel adapts its platform to Message and Reply.
type Core struct {
	o   Options
	log zerolog.Logger

	mu      sync.Mutex
	senders map[string]Sender
	chats   perchat.Line[string]

	defMu sync.RWMutex // guards o.Lang and o.Zone, which a reload changes

	asMu      sync.RWMutex // guards assistant and perHour, which a reload changes
	assistant Assistant
	perHour   int
	rateMu    sync.Mutex // serialises the count of assistant asks

	limit atomic.Pointer[chatlimit.Limiter] // per-principal chat rate
}

// SetChatRate changes the per-principal chat rate (config reload); the
// buckets start full again.
func (c *Core) SetChatRate(perMinute, burst int) {
	c.limit.Store(chatlimit.New(perMinute, burst))
}

// SetDefaults changes the default language and zone (config reload).
func (c *Core) SetDefaults(lang string, zone *time.Location) {
	c.defMu.Lock()
	defer c.defMu.Unlock()
	if l := normLang(lang); l != "" {
		c.o.Lang = l
	}
	if zone != nil {
		c.o.Zone = zone
	}
}

func (c *Core) lang() string {
	c.defMu.RLock()
	defer c.defMu.RUnlock()
	return c.o.Lang
}

func (c *Core) zone() *time.Location {
	c.defMu.RLock()
	defer c.defMu.RUnlock()
	return c.o.Zone
}

// New returns a Core.
func New(o Options) (*Core, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &Core{o: o, log: o.Log, senders: map[string]Sender{}}
	c.SetAssistant(o.Assistant, o.AssistantPerHour)
	c.SetChatRate(o.ChatPerMinute, o.ChatBurst)
	return c, nil
}

// AddSender registers the Sender for a channel's chat addresses; channel
// is the address prefix: "telegram", "feishu" or "console".
func (c *Core) AddSender(channel string, s Sender) {
	c.mu.Lock()
	c.senders[channel] = s
	c.mu.Unlock()
}

func (c *Core) sender(chat string) Sender {
	prefix, _, _ := strings.Cut(chat, ":")
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.senders[prefix]
}

// say starts a message in chat through its channel's Sender.
func (c *Core) say(ctx context.Context, chat string, r Reply) error {
	s := c.sender(chat)
	if s == nil {
		return fmt.Errorf("no channel for %s addresses", channelOf(chat))
	}
	return s.Say(ctx, chat, r)
}

func channelOf(chat string) string {
	prefix, _, _ := strings.Cut(chat, ":")
	return prefix
}

// Handle answers one message. Turns of the same chat run one at a time,
// in arrival order. A message id seen before (per channel, within
// MessageWindow) and a group message not addressed to us (other than a
// press of our own button) get no answer.
func (c *Core) Handle(ctx context.Context, m Message) []Reply {
	if m.Group && !m.Addressed && m.Button == nil { // our own buttons are always for us
		return nil
	}
	if m.Chat == "" || m.Principal == "" {
		return nil
	}
	unlock := c.chats.Lock(m.Chat)
	defer unlock()
	if ctx.Err() != nil {
		return nil // a cancelled turn does nothing (I9)
	}
	if m.ID != "" {
		first, err := c.o.Store.Dedup().Mark(ctx, "msg:"+m.Channel, m.ID, MessageWindow)
		if err != nil {
			c.log.Warn().Str("channel", m.Channel).Err(err).Msg("message dedup unavailable")
		} else if !first {
			return nil
		}
	}
	t := &turn{c: c, ctx: ctx, m: m, lang: c.langOf(ctx, m)}
	lim := c.limit.Load()
	switch lim.Take(m.Principal, c.o.Now()) {
	case chatlimit.Drop:
		return nil
	case chatlimit.Refuse:
		c.log.Info().Str("channel", m.Channel).Msg("chat rate limit reached; further messages go unanswered until it lifts")
		wait := max(lim.RetryAfter(m.Principal, c.o.Now()), time.Second)
		return t.reply("core.too_many_messages", int(wait.Seconds()))
	}
	replies := t.run()
	if !t.secret {
		c.remember(ctx, m, replies)
	}
	return replies
}

func normLang(s string) string {
	s = strings.ToLower(s)
	switch {
	case strings.HasPrefix(s, "zh"):
		return "zh"
	case strings.HasPrefix(s, "en"):
		return "en"
	}
	return ""
}

// ChatOf returns the private chat address of a principal, where herald
// can start a conversation with it ("" when there is none).
func ChatOf(principal string) string { return address.ChatOf(principal) }
