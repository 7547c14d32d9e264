package feishu

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
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

// chats serialises turns per chat: one worker goroutine per chat with
// queued turns, exiting when its queue empties.
type chats struct {
	ctx  context.Context
	run  func(ctx context.Context, j job)
	log  zerolog.Logger
	wg   sync.WaitGroup
	mu   sync.Mutex
	byID map[string][]job
}

func newChats(ctx context.Context, run func(context.Context, job), log zerolog.Logger) *chats {
	return &chats{ctx: ctx, run: run, log: log, byID: map[string][]job{}}
}

// add queues j for chat and reports false when the chat's queue is full.
func (c *chats) add(chat string, j job) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, busy := c.byID[chat]
	if len(q) >= MaxQueue {
		return false
	}
	c.byID[chat] = append(q, j)
	if !busy {
		c.wg.Add(1)
		go c.work(chat)
	}
	return true
}

func (c *chats) work(chat string) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		q := c.byID[chat]
		if len(q) == 0 {
			delete(c.byID, chat)
			c.mu.Unlock()
			return
		}
		j := q[0]
		c.byID[chat] = q[1:]
		c.mu.Unlock()
		if c.ctx.Err() != nil {
			// Cancelled: drain without running (I9).
			if j.press != nil {
				j.press.offer("", nil)
			}
			continue
		}
		c.safeRun(j)
	}
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
