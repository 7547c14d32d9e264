package scheduler_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/runner"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// feedHost is a source host on loopback that answers a feed, or 429 with
// Retry-After while told to, and counts every request it sees.
type feedHost struct {
	srv     *httptest.Server
	hits    atomic.Int32
	tooMany atomic.Bool
}

func newFeedHost(t *testing.T) *feedHost {
	h := &feedHost{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.hits.Add(1)
		if h.tooMany.Load() {
			w.Header().Set("Retry-After", "120")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>A</title><guid>a</guid></item></channel></rss>`)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// opener reads every task's path from the loopback host, whatever host
// the task names (feeds.example.edu): the scheduler keys its holds by the
// task's host.
func (h *feedHost) opener() tasks.SourceOpener {
	return tasks.SourceOpenerFunc(func(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
		spec.URL = h.srv.URL + "/" + spec.URL[strings.LastIndex(spec.URL, "/")+1:]
		return source.New(spec, source.Options{AllowPrivate: true})
	})
}

// quiet waits a little and fails when the host was read meanwhile.
func (h *feedHost) quiet(t *testing.T, want int32, when string) {
	t.Helper()
	time.Sleep(60 * time.Millisecond)
	if n := h.hits.Load(); n != want {
		t.Fatalf("%s: the host saw %d requests, want %d", when, n, want)
	}
}

// SPEC §18: a 429 with Retry-After: 120 from a source host stops every
// check of that host for 120 s, a person's "run now" included, though
// the tasks are due every minute; then both are checked again.
func TestRetryAfter120StopsAllChecksOfTheHostFor120s(t *testing.T) {
	host := newFeedHost(t)
	r := newRig(t)
	r.setSources(host.opener())
	decls := manyDeclared(2, "feeds.example.edu")
	decls[1].Source.URL = "https://feeds.example.edu/other.xml"
	for i := range decls {
		decls[i].Schedule = "every 1m"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.m.SetDeclared(ctx, decls); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deliverytest.WaitFor(t, func() bool { return host.hits.Load() == 2 && r.s.RunningCount() == 0 }) // the baselines

	host.tooMany.Store(true)
	rec := r.run(decls[0].ID)
	if rec.Outcome != tasks.OutcomeFailed || rec.Attempts != 1 {
		t.Fatalf("429: outcome %q after %d attempts, want failed after one (no I6 retry sooner than asked)", rec.Outcome, rec.Attempts)
	}
	host.tooMany.Store(false)
	held := t0.Add(120 * time.Second)
	for _, d := range decls {
		tk, _ := r.m.Get(ctx, d.ID)
		if n := r.m.Next(tk); !n.At.Equal(held) || n.Why != tasks.NextByRetryAfter || n.Host != "feeds.example.edu" {
			t.Fatalf("task %s next check %+v, want at %v because feeds.example.edu asked", d.ID, n, held)
		}
	}
	r.clock.Advance(time.Minute) // both every-1m checks fall due
	host.quiet(t, 2+1, "1m into the hold")
	if rec := r.run(decls[1].ID); rec.Outcome != tasks.OutcomePostponed || !strings.Contains(rec.Reason, "feeds.example.edu asked herald to wait") {
		t.Fatalf("run now while held: %+v, want postponed", rec)
	}
	host.quiet(t, 3, "run now while held")
	r.clock.Advance(59 * time.Second)
	host.quiet(t, 3, "119s into the hold")
	r.clock.Advance(time.Second)
	deliverytest.WaitFor(t, func() bool { return host.hits.Load() == 5 && r.s.RunningCount() == 0 })
	host.quiet(t, 5, "after the hold")
	// The due checks waited in the plan, not as runs turned away.
	runs, err := r.m.Runs(ctx, decls[1].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	postponed := 0
	for _, rec := range runs {
		if rec.Outcome == tasks.OutcomePostponed {
			postponed++
		}
	}
	if postponed != 1 {
		t.Fatalf("%d postponed runs in the history, want only the one asked for", postponed)
	}
	for _, d := range decls {
		tk, _ := r.m.Get(ctx, d.ID)
		if n := r.m.Next(tk); !n.At.Equal(held.Add(time.Minute)) || n.Why != tasks.NextBySchedule {
			t.Fatalf("task %s next check %+v after the hold, want the schedule's at %v", d.ID, n, held.Add(time.Minute))
		}
	}
}

// SPEC §18: a source that keeps failing is checked less often — the wait
// doubles with each failure after the first, at most 6 h — and goes back
// to its schedule on the first success.
func TestFailingHostBacksOffDoublingToSixHoursThenSchedule(t *testing.T) {
	r := newRig(t)
	r.setRetryWaits([]time.Duration{}) // one attempt per check
	r.own()
	ctx := context.Background()
	tk := r.activeTask() // every 1h
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	want := []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour, 6 * time.Hour, 6 * time.Hour}
	for i, wait := range want {
		r.src.Push(nil, watch.Errorf(watch.Transient, "GET https://news.example.edu: HTTP 502"))
		r.run(tk.ID)
		cur, _ := r.m.Get(ctx, tk.ID)
		if got := cur.NextRun.Sub(cur.LastRunEnd); got != wait {
			t.Fatalf("after %d failures the next check is %v away, want %v", i+1, got, wait)
		}
		n := r.m.Next(cur)
		if wantWhy := map[bool]string{true: tasks.NextByBackoff, false: tasks.NextBySchedule}[i > 0]; n.Why != wantWhy || (i > 0 && n.Failures != i+1) {
			t.Fatalf("after %d failures next check %+v, want why %s", i+1, n, wantWhy)
		}
	}
	r.src.Push(items("a", 1), nil)
	r.run(tk.ID)
	cur, _ := r.m.Get(ctx, tk.ID)
	if got := cur.NextRun.Sub(cur.LastRunEnd); got != time.Hour || r.m.Next(cur).Why != tasks.NextBySchedule {
		t.Fatalf("after a success the next check is %v away (%+v), want the schedule's 1h", got, r.m.Next(cur))
	}
}

// SPEC §18 and I4: the checks owed at a start are spread over the first
// seconds or minutes, each task at its own fixed place, rather than fired
// at once — and each is still checked exactly once.
func TestI4_StartUpChecksAreSpreadOutEachOnce(t *testing.T) {
	const n = 20
	r := newRig(t)
	r.spread = 3 * time.Minute
	r.build()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.m.SetDeclared(ctx, manyDeclared(n, "")); err != nil {
		t.Fatal(err)
	}
	r.src.Push(items("a", 1), nil)
	done := make(chan struct{})
	go func() { r.eng.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond)
	if c := r.src.Calls(); c >= n/2 {
		t.Fatalf("%d of %d owed checks ran at once, want them spread out", c, n)
	}
	// n owed checks spread a second apart on average: all within n-1 s.
	for range n - 1 {
		r.clock.Advance(time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	deliverytest.WaitFor(t, func() bool { return r.src.Calls() == n && r.s.RunningCount() == 0 })
	time.Sleep(50 * time.Millisecond)
	if c := r.src.Calls(); c != n {
		t.Fatalf("%d checks for %d owed, want each exactly once", c, n)
	}
}

// tasks.Backoff: the schedule's wait doubles with each failure after the
// first, capped at six hours, never sooner than the schedule.
func TestBackoffDoublesTheScheduledWaitUpToSixHours(t *testing.T) {
	end := t0
	for _, c := range []struct {
		name     string
		interval time.Duration
		failures int
		want     time.Duration
		later    bool
	}{
		{"first failure keeps the schedule", time.Minute, 1, time.Minute, false},
		{"second doubles", time.Minute, 2, 2 * time.Minute, true},
		{"fifth is 16x", time.Minute, 5, 16 * time.Minute, true},
		{"capped at 6h", time.Minute, 30, 6 * time.Hour, true},
		{"daily stays daily", 24 * time.Hour, 9, 24 * time.Hour, false},
		{"4h doubles to the cap", 4 * time.Hour, 2, 6 * time.Hour, true},
	} {
		got, later := tasks.Backoff(end, end.Add(c.interval), c.failures)
		if got.Sub(end) != c.want || later != c.later {
			t.Errorf("%s: %v later=%v, want %v later=%v", c.name, got.Sub(end), later, c.want, c.later)
		}
	}
}

// A task someone asked for that has never read its source tells its
// owner at its first failure, in the source's words; an established task,
// or one from the config file, still waits for runner.FailingAfter
// failures in a row, and its notice says why too.
func TestWatchFailingNoticeAtFirstFailureOfANewTaskWithTheReason(t *testing.T) {
	for _, c := range []struct {
		name        string
		established bool
		declared    bool // in the config file: its admin reads the log
		notifiedAt  int
	}{
		{"new task", false, false, 1},
		{"established task", true, false, runner.FailingAfter},
		{"new config task", false, true, runner.FailingAfter},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.own()
			tk := r.activeTask()
			if c.declared {
				if err := r.m.SetDeclared(context.Background(), manyDeclared(1, "news.example.edu")); err != nil {
					t.Fatal(err)
				}
				tk, _ = r.m.Get(context.Background(), "bulk-00000")
			}
			if c.established {
				r.src.Push(items("a", 1), nil)
				r.run(tk.ID)
			}
			for i := 1; i <= runner.FailingAfter; i++ {
				r.src.Push(nil, watch.Errorf(watch.NotFound, "GET https://news.example.edu: HTTP 404"))
				r.run(tk.ID)
				_, notices := r.effects(tk.ID)
				failing := 0
				for _, n := range notices {
					if m := deliverytest.Message(t, n); m.Title == "Watch failing" {
						failing++
						if !strings.Contains(m.Text, "not_found: GET https://news.example.edu: HTTP 404") {
							t.Fatalf("the notice does not say why: %q", m.Text)
						}
					}
				}
				if want := map[bool]int{true: 1, false: 0}[i >= c.notifiedAt]; failing != want {
					t.Fatalf("after %d failures %d 'Watch failing' notices, want %d", i, failing, want)
				}
			}
			cur, _ := r.m.Get(context.Background(), tk.ID)
			if cur.LastReason != "not_found: GET https://news.example.edu: HTTP 404" {
				t.Fatalf("the task keeps the reason %q", cur.LastReason)
			}
		})
	}
}
