package main

import (
	"context"
	"sync"

	"github.com/herald-bridge/herald/channels/console"
	"github.com/herald-bridge/herald/conversation"
	hook "github.com/herald-bridge/herald/webhook"
)

// channelSet runs the conversational side: each channel has its own
// lifecycle and never stops the task manager or delivery.
type channelSet struct {
	s        *service
	core     *conversation.Core
	mu       sync.Mutex
	statuses map[string]string
	runners  map[string]func(context.Context) error
}

func newChannelSet(ctx context.Context, s *service) (*channelSet, error) {
	c := &channelSet{s: s, statuses: map[string]string{}, runners: map[string]func(context.Context) error{}}
	core, err := conversation.New(conversation.Options{
		Tasks:  s.manager,
		Store:  s.store,
		Prefs:  s.prefs,
		Tokens: hook.InboxTokens{KV: s.store.Channels()},
		Zone:   s.cfg.Location,
		Lang:   s.cfg.Language,
		Log:    s.log.With().Str("component", "conversation").Logger(),
	})
	if err != nil {
		return nil, err
	}
	c.core = core
	core.AddSender("console", console.New(s.store.Channels()))
	c.runners["conversation"] = core.Run
	if !s.cfg.Channels.Telegram.Enabled {
		c.statuses["telegram"] = "off"
	}
	if !s.cfg.Channels.Feishu.Enabled {
		c.statuses["feishu"] = "off"
	}
	c.statuses["console"] = "on"
	return c, nil
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
	return out
}

// mountAdmin registers the channels' admin operations (chat.send, chat.poll).
func (c *channelSet) mountAdmin(a *hook.Admin) {
	console.Mount(a, c.core, c.s.store.Channels())
}
