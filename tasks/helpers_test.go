package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
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

// effects returns a task's ledger entries by kind.
func (r *rig) effects(id string) (items, notices []store.Effect) {
	r.t.Helper()
	fxs, err := r.store.Ledger().List(context.Background(), id, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, fx := range fxs {
		if fx.Kind == delivery.KindState {
			notices = append(notices, fx)
		} else {
			items = append(items, fx)
		}
	}
	return items, notices
}

// recorder is a sink that records every send and answers as told.
type recorder struct {
	mu      sync.Mutex
	sent    []delivery.Delivery
	answer  func(d delivery.Delivery) delivery.Outcome
	onSend  func(d delivery.Delivery)
	dedups  bool
	arrived chan struct{}
}

func newRecorder() *recorder { return &recorder{arrived: make(chan struct{}, 10000)} }

func (s *recorder) Send(_ context.Context, d delivery.Delivery) delivery.Outcome {
	if s.onSend != nil {
		s.onSend(d)
	}
	s.mu.Lock()
	s.sent = append(s.sent, d)
	answer := s.answer
	s.mu.Unlock()
	s.arrived <- struct{}{}
	if answer != nil {
		return answer(d)
	}
	return delivery.Outcome{Result: delivery.Completed, ProviderID: "m-1"}
}

func (s *recorder) Dedups(delivery.Address) bool { return s.dedups }

func (s *recorder) items() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, d := range s.sent {
		for _, it := range d.Message.Items {
			out[it.ID]++
		}
	}
	return out
}

func (s *recorder) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// dispatch runs a real dispatcher over the rig's ledger into sink until
// the queue is drained, then stops it.
func (r *rig) dispatch(sink delivery.Sink, worker string) {
	r.t.Helper()
	d, err := delivery.NewDispatcher(delivery.Options{
		Ledger: r.store.Ledger(), Worker: worker, Log: zerolog.Nop(), Poll: 10 * time.Millisecond, Now: r.clock.Now,
		Router: delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{
			delivery.InboxAddr: sink, delivery.TelegramChat: sink}}),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	waitFor(r.t, func() bool {
		due, err := r.store.Ledger().Due(context.Background(), r.clock.Now().Add(time.Minute), 1)
		return err == nil && len(due) == 0 && !r.inFlight()
	})
	cancel()
	<-done
}

func (r *rig) inFlight() bool {
	recs, _ := r.store.Catalog().List(context.Background())
	ids := []string{"test"}
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	for _, id := range ids {
		fxs, _ := r.store.Ledger().List(context.Background(), id, 0)
		for _, fx := range fxs {
			if fx.InFlight {
				return true
			}
		}
	}
	return false
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func decodeMsg(t *testing.T, fx store.Effect) delivery.Message {
	t.Helper()
	var m delivery.Message
	if err := json.Unmarshal(fx.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// liveTasks counts the live tasks in all (the I7 total).
func liveTasks(ctx context.Context, m *Manager) (int, error) {
	n, err := countLive(ctx, m.store.Catalog(), "")
	return n.total, err
}
