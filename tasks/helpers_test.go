package tasks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks/source/sourcetest"
	"github.com/herald-bridge/herald/tasks/watch"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// items returns n items named after prefix.
func items(prefix string, n int) []watch.Item { return sourcetest.Items(prefix, n) }

type rig struct {
	t     *testing.T
	path  string
	store *bolt.Store
	clock *ManualClock
	src   *sourcetest.Scripted
	m     *Manager
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "herald.db"), clock: NewManualClock(t0), src: &sourcetest.Scripted{}}
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
