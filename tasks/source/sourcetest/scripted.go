package sourcetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Scripted is a source whose answers the test decides, one per fetch;
// once the pushed answers run out it repeats the last one.
type Scripted struct {
	// OnFetch runs inside Fetch, before it answers, with the fetch's
	// number counting from 1.
	OnFetch func(n int)
	// Kind and Title are the kind the source is read as and its own
	// title, in every answer.
	Kind, Title string

	mu    sync.Mutex
	steps []step
	last  step
	calls int
}

type step struct {
	items []watch.Item
	err   error
}

// Push queues the next answer: items, or err when it is not nil.
func (s *Scripted) Push(items []watch.Item, err error) {
	s.mu.Lock()
	s.steps = append(s.steps, step{items, err})
	s.mu.Unlock()
}

// Fetch gives the next scripted answer.
func (s *Scripted) Fetch(ctx context.Context, _ watch.Conditional) (watch.Result, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	if len(s.steps) > 0 {
		s.last, s.steps = s.steps[0], s.steps[1:]
	}
	st := s.last
	hook := s.OnFetch
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	if st.err != nil {
		return watch.Result{}, st.err
	}
	return watch.Result{Items: st.items, Kind: s.Kind, Title: s.Title}, nil
}

// Calls returns the number of fetches so far.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Items returns n items with IDs prefix-0 … prefix-(n-1) on
// news.example.edu.
func Items(prefix string, n int) []watch.Item {
	out := make([]watch.Item, n)
	for i := range out {
		id := fmt.Sprintf("%s-%d", prefix, i)
		out[i] = watch.Item{ID: id, Title: "Item " + id, URL: "https://news.example.edu/" + id, Digest: "d-" + id}
	}
	return out
}
