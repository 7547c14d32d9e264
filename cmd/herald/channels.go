package main

import (
	"context"
	"sync"

	"github.com/herald-bridge/herald/channels/console"
	fschan "github.com/herald-bridge/herald/channels/feishu"
	tgchan "github.com/herald-bridge/herald/channels/telegram"
	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/transfer"
	hook "github.com/herald-bridge/herald/webhook"
)

// channelSet runs the conversational side: each channel has its own
// lifecycle and never stops the task manager or delivery.
type channelSet struct {
	s        *service
	core     *conversation.Core
	memory   *memory.Keeper
	mu       sync.Mutex
	statuses map[string]string
	runners  map[string]func(context.Context) error
	live     map[string]func() string // channels that report their own status
}

func newChannelSet(ctx context.Context, s *service) (*channelSet, error) {
	c := &channelSet{s: s, statuses: map[string]string{}, runners: map[string]func(context.Context) error{}, live: map[string]func() string{}}
	mem, err := newMemory(s)
	if err != nil {
		return nil, err
	}
	c.memory = mem
	c.runners["history"] = mem.Run
	core, err := conversation.New(conversation.Options{
		Tasks:  s.manager,
		Store:  s.store,
		Prefs:  s.prefs,
		Tokens: hook.InboxTokens{KV: s.store.Channels()},
		Zone:   s.cfg.Location,
		Lang:   s.cfg.Language,
		Log:    s.log.With().Str("component", "conversation").Logger(),

		Assistant:        newAssistant(s.cfg, s.route, s.log.With().Str("component", "assistant").Logger(), s.notices),
		AssistantPerHour: s.cfg.Assistant.MaxPerHour,
		ChatPerMinute:    s.cfg.Policy.Limits.Chat.PerMinute,
		ChatBurst:        s.cfg.Policy.Limits.Chat.Burst,
		Memory:           mem,
		Importer:         transfer.Files{M: s.manager},
		Trier:            sourceOpener{s},
	})
	if err != nil {
		return nil, err
	}
	c.core = core
	core.AddSender("console", console.New(s.store.Channels()))
	c.runners["conversation"] = core.Run
	if tg := s.cfg.Channels.Telegram; tg.Enabled && tg.Token != "" {
		ch, err := tgchan.New(tgchan.Options{
			Token: tg.Token, APIURL: tg.APIURL, Mode: tg.Mode, WebhookSecret: tg.WebhookSecret,
			PublicURL: s.cfg.Server.PublicURL, Handler: core, Store: s.store, Holder: s.holder,
			HTTPClient: platformClient(s.route(tg.Proxy), telegramWait),
			Log:        s.log.With().Str("component", "telegram").Logger(),
		})
		if err != nil {
			return nil, err
		}
		c.add("telegram", ch)
		s.server.HandleHTTP("POST "+tgchan.WebhookPath, ch.WebhookHandler())
	} else {
		c.statuses["telegram"] = "off"
	}
	if f := s.cfg.Channels.Feishu; f.Enabled && f.AppID != "" && f.AppSecret != "" {
		ch, err := fschan.New(fschan.Options{
			AppID: f.AppID, AppSecret: f.AppSecret, Mode: f.Mode, VerificationToken: f.VerificationToken,
			EncryptKey: f.EncryptKey, BaseURL: f.BaseURL, Handler: core, Store: s.store,
			Tokens:     s.feishuTokens(f),
			HTTPClient: egress.Client(platformOptions(s.route(f.Proxy), fschan.DefaultTimeout)),
			LongConn:   &fschan.LongConn{Transport: egress.SharedTransport(platformOptions(s.route(f.Proxy), fschan.DefaultTimeout)), Dial: platformDial(s.route(f.Proxy))},
			Log:        s.log.With().Str("component", "feishu").Logger(),
		})
		if err != nil {
			return nil, err
		}
		c.add("feishu", ch)
		if f.Mode == "webhook" {
			s.server.HandleHTTP("POST /feishu/events", ch.EventHandler())
		}
	} else {
		c.statuses["feishu"] = "off"
	}
	c.statuses["console"] = "on"
	return c, nil
}

// chatChannel is a chat platform's adapter: it carries the core's
// replies, runs on its own and reports its own status.
type chatChannel interface {
	conversation.Sender
	Run(ctx context.Context) error
	Status() string
}

// add joins a chat channel to the set under name.
func (c *channelSet) add(name string, ch chatChannel) {
	c.core.AddSender(name, ch)
	c.runners[name] = ch.Run
	c.live[name] = ch.Status
}

func (c *channelSet) start(ctx context.Context, start func(string, func(context.Context) error)) {
	for name, fn := range c.runners {
		start(name, fn)
	}
}

func (c *channelSet) status() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.statuses))
	for k, v := range c.statuses {
		out[k] = v
	}
	for k, f := range c.live {
		out[k] = f()
	}
	return out
}

// mountAdmin registers the channels' admin operations (chat.send, chat.poll).
func (c *channelSet) mountAdmin(a *hook.Admin) {
	console.Mount(a, c.core, c.s.store.Channels())
}
