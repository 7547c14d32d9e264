package scheduler_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// hostGates blocks the fetches of every host it lists until that host's
// release channel closes.
type hostGates map[string]*gate

func (g hostGates) opener() tasks.SourceOpener {
	return tasks.SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
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
	r.setSources(gates.opener())
	p := r.m.Policy()
	p.Limits.Concurrency = 1
	r.m.SetPolicy(p)
	submit := func(u string) *tasks.Task {
		tk, err := r.m.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: u, Schedule: "every 1h", Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	a, b := submit("https://a.example.edu/feed"), submit("https://b.example.edu/feed")
	r.s.StartRun(ctx, a.ID, scheduler.Check, false)
	<-gates["a.example.edu"].entered
	r.s.StartRun(ctx, b.ID, scheduler.Check, false)
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
	r.s.WaitRuns()
}
