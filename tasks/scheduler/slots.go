package scheduler

import (
	"context"
	"sync"
)

// slots is the global cap on runs at once (policy.limits.concurrent_runs).
// Unlike a buffered channel its size can change while runs hold slots: a
// reload that lowers it lets running checks finish and starts new ones
// only below the new size; one that raises it starts waiting runs at once.
type slots struct {
	mu      sync.Mutex
	size    int
	used    int
	changed chan struct{} // closed and replaced whenever a slot may have opened
}

func newSlots(size int) *slots {
	return &slots{size: max(size, 1), changed: make(chan struct{})}
}

// acquire takes a slot, waiting until one is free or ctx ends.
func (s *slots) acquire(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.used < s.size {
			s.used++
			s.mu.Unlock()
			return nil
		}
		wait := s.changed
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives a slot back.
func (s *slots) release() {
	s.mu.Lock()
	s.used--
	s.signal()
	s.mu.Unlock()
}

// resize sets the number of slots.
func (s *slots) resize(size int) {
	s.mu.Lock()
	s.size = max(size, 1)
	s.signal()
	s.mu.Unlock()
}

func (s *slots) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// inUse reports how many slots are taken.
func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}
