package tasks

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

func TestSlotsResize(t *testing.T) {
	s := newSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan struct{})
	go func() {
		if err := s.acquire(ctx); err == nil {
			close(got)
		}
	}()
	select {
	case <-got:
		t.Fatal("a third run started with two slots")
	case <-time.After(50 * time.Millisecond):
	}
	s.resize(3) // a reload raising the cap starts the waiting run at once
	<-got

	s.resize(1) // lowering it lets running ones finish, starts none
	s.release()
	s.release()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.acquire(short); err == nil {
		t.Fatal("a run started above the lowered cap")
	}
	s.release()
	if err := s.acquire(ctx); err != nil || s.inUse() != 1 {
		t.Fatalf("acquire after release: %v, %d in use", err, s.inUse())
	}
}

// hostGates blocks the fetches of every host it lists until that host's
// release channel closes.
type hostGates map[string]*gate

func (g hostGates) opener() SourceOpener {
	return SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (Source, error) {
		u, err := url.Parse(spec.URL)
		if err != nil {
			return nil, err
		}
		return gated{g: g[u.Host], host: u.Host}, nil
	})
}

// The global cap on runs at once comes from the policy and follows a
// reload (policy.limits.concurrent_runs).
func TestI7_ConcurrentRunsFollowPolicy(t *testing.T) {
	r := newRig(t)
	r.own()
	ctx := context.Background()
	gates := hostGates{"a.example.edu": newGate("a.example.edu"), "b.example.edu": newGate("b.example.edu")}
	r.m.o.Sources = gates.opener()
	p := r.m.Policy()
	p.Limits.Concurrency = 1
	r.m.SetPolicy(p)
	submit := func(u string) *Task {
		tk, err := r.m.Submit(ctx, Submission{Principal: "console:admin", URL: u, Schedule: "every 1h", Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a, b := submit("https://a.example.edu/feed"), submit("https://b.example.edu/feed")
	r.m.startRun(ctx, a.ID, wakeCheck, false)
	<-gates["a.example.edu"].entered
	r.m.startRun(ctx, b.ID, wakeCheck, false)
	select {
	case <-gates["b.example.edu"].entered:
		t.Fatal("a second run started with concurrent_runs 1")
	case <-time.After(100 * time.Millisecond):
	}
	p.Limits.Concurrency = 2
	r.m.SetPolicy(p)
	select {
	case <-gates["b.example.edu"].entered:
	case <-time.After(5 * time.Second):
		t.Fatal("raising concurrent_runs did not start the waiting run")
	}
	close(gates["a.example.edu"].release)
	close(gates["b.example.edu"].release)
	r.m.waitRuns()
}
