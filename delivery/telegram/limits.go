package telegram

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits paces sends to stay inside Telegram's published limits. Zero
// fields take the defaults; rate.Inf disables a limit.
type Limits struct {
	PerChat  rate.Limit // default 1/s
	PerGroup rate.Limit // group chats (negative id), default 20/min
	Global   rate.Limit // whole bot, default 30/s
}

// DefaultLimits are Telegram's documented limits.
var DefaultLimits = Limits{
	PerChat:  rate.Every(time.Second),
	PerGroup: rate.Every(3 * time.Second),
	Global:   30,
}

// chatLimitersMax bounds the per-chat limiter table; idle entries are
// dropped when it grows past this.
const chatLimitersMax = 4096

// pacer holds the token buckets. Waiting is pacing, not retrying: it
// happens before anything is sent.
type pacer struct {
	l      Limits
	global *rate.Limiter

	mu    sync.Mutex
	chats map[int64]*chatLimiter
}

type chatLimiter struct {
	chat  *rate.Limiter
	group *rate.Limiter // nil for private chats
}

func newPacer(l Limits) *pacer {
	if l.PerChat == 0 {
		l.PerChat = DefaultLimits.PerChat
	}
	if l.PerGroup == 0 {
		l.PerGroup = DefaultLimits.PerGroup
	}
	if l.Global == 0 {
		l.Global = DefaultLimits.Global
	}
	return &pacer{l: l, global: rate.NewLimiter(l.Global, max(1, int(l.Global))), chats: map[int64]*chatLimiter{}}
}

func (p *pacer) limiter(chat int64) *chatLimiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.chats[chat]; ok {
		return c
	}
	if len(p.chats) >= chatLimitersMax {
		p.prune()
	}
	c := &chatLimiter{chat: rate.NewLimiter(p.l.PerChat, 1)}
	if chat < 0 {
		c.group = rate.NewLimiter(p.l.PerGroup, 5)
	}
	p.chats[chat] = c
	return c
}

// prune drops limiters whose buckets are full, i.e. chats that have been
// idle long enough that forgetting them changes nothing.
func (p *pacer) prune() {
	now := time.Now()
	for id, c := range p.chats {
		if c.chat.TokensAt(now) >= 1 && (c.group == nil || c.group.TokensAt(now) >= float64(c.group.Burst())) {
			delete(p.chats, id)
		}
	}
}

// maxPaceWait is the longest a send waits for its turn inside a worker;
// a longer wait goes back to the ledger as retry_after, so a busy group
// chat never ties up the dispatcher's workers (pushes wait durably).
const maxPaceWait = time.Second

// pacedError says the send must wait longer than maxPaceWait.
type pacedError struct{ wait time.Duration }

func (e *pacedError) Error() string { return "rate limit pacing: retry in " + e.wait.String() }

// wait blocks until one message to chat may be sent (at most maxPaceWait),
// or ctx ends. A longer wait returns *pacedError without using a token.
func (p *pacer) wait(ctx context.Context, chat int64) error {
	c := p.limiter(chat)
	now := time.Now()
	rs := []*rate.Reservation{c.chat.ReserveN(now, 1), p.global.ReserveN(now, 1)}
	if c.group != nil {
		rs = append(rs, c.group.ReserveN(now, 1))
	}
	var delay time.Duration
	for _, r := range rs {
		if !r.OK() {
			delay = maxPaceWait + time.Minute
			break
		}
		delay = max(delay, r.DelayFrom(now))
	}
	cancel := func() {
		for _, r := range rs {
			r.CancelAt(now)
		}
	}
	if delay > maxPaceWait {
		cancel()
		return &pacedError{wait: delay}
	}
	if delay <= 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	}
}
