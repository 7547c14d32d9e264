package tasks

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks/watch"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// scripted is a source whose answers the test decides, one per fetch.
type scripted struct {
	mu      sync.Mutex
	steps   []step
	last    step
	calls   int
	onFetch func(n int) // runs inside Fetch, before it answers
}

type step struct {
	items []watch.Item
	err   error
}

func (s *scripted) push(items []watch.Item, err error) {
	s.mu.Lock()
	s.steps = append(s.steps, step{items, err})
	s.mu.Unlock()
}

func (s *scripted) Fetch(ctx context.Context, _ watch.Conditional) (watch.Result, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	if len(s.steps) > 0 {
		s.last, s.steps = s.steps[0], s.steps[1:]
	}
	st := s.last
	hook := s.onFetch
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	if st.err != nil {
		return watch.Result{}, st.err
	}
	return watch.Result{Items: st.items}, nil
}

func (s *scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func items(prefix string, n int) []watch.Item {
	out := make([]watch.Item, n)
	for i := range out {
		id := fmt.Sprintf("%s-%d", prefix, i)
		out[i] = watch.Item{ID: id, Title: "Item " + id, URL: "https://news.example.edu/" + id, Digest: "d-" + id}
	}
	return out
}

type rig struct {
	t     *testing.T
	path  string
	store *bolt.Store
	clock *ManualClock
	src   *scripted
	m     *Manager
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "herald.db"), clock: NewManualClock(t0), src: &scripted{}}
	r.open("replica-a")
	return r
}

func (r *rig) open(holder string) {
	r.t.Helper()
	st, err := bolt.Open(r.path, bolt.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.store = st
	r.t.Cleanup(func() { st.Close() })
	m, err := New(Options{
		Store: st, Clock: r.clock, Holder: holder, Log: zerolog.Nop(),
		Policy: Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*", "telegram:*"},
			AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.m = m
}

// activeTask creates an approved task notifying the given recipients.
func (r *rig) activeTask(notify ...string) *Task {
	r.t.Helper()
	if len(notify) == 0 {
		notify = []string{"inbox:console:alice"}
	}
	tk, err := r.m.Submit(context.Background(), Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml",
		Schedule: "every 1h", Notify: notify})
	if err != nil {
		r.t.Fatal(err)
	}
	if tk.State != Active {
		r.t.Fatalf("task state %s, want active", tk.State)
	}
	return tk
}

// liveTasks counts the live tasks in all (the I7 total).
func liveTasks(ctx context.Context, m *Manager) (int, error) {
	n, err := countLive(ctx, m.store.Catalog(), "")
	return n.total, err
}
