package feishu

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/perchat"
)

// job is one queued turn.
type job struct {
	msg conversation.Message
	// ev carries a received message still to be mapped (the mapping may
	// need the bot's identity, fetched off the event's 3 s path); nil for
	// presses.
	ev *inbound
	// press is set for a card press whose answer someone waits for.
	press *pressWait
}

// pressWait hands a press's answer to the waiting card callback, unless
// it gave up waiting; then the worker says everything itself.
type pressWait struct {
	mu        sync.Mutex
	abandoned bool
	done      chan struct{}
	toast     string
	card      *conversation.Reply
}

func newPressWait() *pressWait { return &pressWait{done: make(chan struct{})} }

// offer gives the waiter the toast and the edited card and reports
// whether it took them.
func (p *pressWait) offer(toast string, card *conversation.Reply) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.abandoned {
		return false
	}
	p.toast, p.card = toast, card
	close(p.done)
	return true
}

// abandon gives up waiting unless the answer came already; it reports
// whether the answer is there.
func (p *pressWait) abandon() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return true
	default:
		p.abandoned = true
		return false
	}
}

// chats runs queued turns, one chat's turns one at a time in arrival
// order (perchat), answering the event callback at once.
type chats struct {
	ctx  context.Context
	run  func(ctx context.Context, j job)
	log  zerolog.Logger
	wg   sync.WaitGroup
	line perchat.Line[string]
}

func newChats(ctx context.Context, run func(context.Context, job), log zerolog.Logger) *chats {
	return &chats{ctx: ctx, run: run, log: log}
}

// add queues j for chat and reports false when the chat's queue is full.
func (c *chats) add(chat string, j job) bool {
	wait, ok := c.line.Queue(chat, MaxQueue)
	if !ok {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		done := wait()
		defer done()
		if c.ctx.Err() != nil {
			// Cancelled: drain without running (I9).
			if j.press != nil {
				j.press.offer("", nil)
			}
			return
		}
		c.safeRun(j)
	}()
	return true
}

func (c *chats) safeRun(j job) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Msg("feishu turn panicked")
			if j.press != nil {
				j.press.offer("", nil)
			}
		}
	}()
	c.run(c.ctx, j)
}

// wait blocks until every worker has exited.
func (c *chats) wait() { c.wg.Wait() }
