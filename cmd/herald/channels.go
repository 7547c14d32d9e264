package main

import (
	"context"
	"sync"

	hook "github.com/herald-bridge/herald/webhook"
)

// channelSet runs the conversational side: each channel has its own
// lifecycle and never stops the task manager or delivery.
type channelSet struct {
	s        *service
	mu       sync.Mutex
	statuses map[string]string
	runners  map[string]func(context.Context) error
}

func newChannelSet(ctx context.Context, s *service) (*channelSet, error) {
	c := &channelSet{s: s, statuses: map[string]string{}, runners: map[string]func(context.Context) error{}}
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

func (c *channelSet) mountAdmin(a *hook.Admin) {}
