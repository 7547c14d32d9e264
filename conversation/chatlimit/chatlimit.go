// Package chatlimit bounds how many chat messages one principal may have
// answered: a token bucket per principal (default 30 a minute, bursts of
// 10). A principal over the limit hears once that it is, then nothing
// until the bucket has a token again; other principals are unaffected.
package chatlimit

import (
	"sync"
	"time"
)

// Defaults.
const (
	DefaultPerMinute = 30
	DefaultBurst     = 10
)

// maxIdle bounds the principals remembered: beyond it, buckets that are
// full again (their principal idle) are forgotten, since a full bucket
// is what a new principal gets anyway.
const maxIdle = 4096

// Verdict says what to do with one message.
type Verdict int

const (
	// Allow: answer the message.
	Allow Verdict = iota
	// Refuse: over the limit, and the principal has not been told yet:
	// answer with the one polite "slow down".
	Refuse
	// Drop: over the limit and already told: no answer.
	Drop
)

// Limiter is safe for concurrent use. The zero value is not usable; use New.
type Limiter struct {
	mu      sync.Mutex
	rate    float64 // tokens per second
	burst   float64
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
	told   bool // the principal heard it is over the limit
}

// New returns a Limiter of perMinute messages a minute with bursts of
// burst; a value ≤ 0 takes its default.
func New(perMinute, burst int) *Limiter {
	if perMinute <= 0 {
		perMinute = DefaultPerMinute
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	return &Limiter{rate: float64(perMinute) / 60, burst: float64(burst), buckets: map[string]*bucket{}}
}

// Take spends one token of principal's bucket at now.
func (l *Limiter) Take(principal string, now time.Time) Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[principal]
	if b == nil {
		if len(l.buckets) >= maxIdle {
			l.forgetFull(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[principal] = b
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		b.told = false
		return Allow
	}
	if b.told {
		return Drop
	}
	b.told = true
	return Refuse
}

// RetryAfter is how long principal waits for its next token (0: now).
func (l *Limiter) RetryAfter(principal string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[principal]
	if b == nil {
		return 0
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)).Round(time.Second)
}

func (l *Limiter) refill(b *bucket, now time.Time) {
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens += el * l.rate
		if b.tokens > l.burst {
			b.tokens = l.burst
		}
		b.at = now
	}
}

func (l *Limiter) forgetFull(now time.Time) {
	for p, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.buckets, p)
		}
	}
}
