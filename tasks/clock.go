package tasks

import (
	"sort"
	"sync"
	"time"
)

// Clock is the manager's one clock. Production uses RealClock; tests use
// ManualClock and move time explicitly.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// After is time.After.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ManualClock is a clock that moves only when told to.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	// waiting is signalled whenever a new waiter registers, so tests can
	// wait until the code under test is asleep before advancing.
	waiting chan struct{}
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock starts at t.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t, waiting: make(chan struct{}, 1024)}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After registers a waiter woken when the clock reaches now+d.
func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(d)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: at, ch: ch})
	select {
	case c.waiting <- struct{}{}:
	default:
	}
	return ch
}

// Waiters reports how many timers are pending.
func (c *ManualClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Advance moves the clock by d and fires every timer due by then, in order.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	sort.Slice(c.waiters, func(i, j int) bool { return c.waiters[i].at.Before(c.waiters[j].at) })
	keep := c.waiters[:0]
	var fire []waiter
	for _, w := range c.waiters {
		if !w.at.After(now) {
			fire = append(fire, w)
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
	c.mu.Unlock()
	for _, w := range fire {
		w.ch <- now
	}
}

// Set moves the clock to t (never backwards) firing due timers.
func (c *ManualClock) Set(t time.Time) {
	if d := t.Sub(c.Now()); d > 0 {
		c.Advance(d)
	}
}
