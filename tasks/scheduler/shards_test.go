package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/watch"
)

// A replica that loses a task's shard while the task's run fetches stops
// that run: it commits nothing (I5, I9), and the task is no longer
// scheduled or run here.
func TestI5_LosingAShardCancelsItsRunAndCommitsNothing(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	r.src.Push(items("a", 3), nil)
	r.src.OnFetch = func(int) { r.s.Drop(0) } // the shard goes while the source answers
	rec := r.run(tk.ID)
	if rec.Outcome != tasks.OutcomeCancelled {
		t.Fatalf("outcome %q, want cancelled", rec.Outcome)
	}
	if _, err := r.store.Snapshots().Get(context.Background(), tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run of a lost shard wrote a snapshot (err=%v)", err)
	}
	if fx, n := r.effects(tk.ID); len(fx)+len(n) != 0 {
		t.Fatalf("a run of a lost shard claimed %d effects", len(fx)+len(n))
	}
	if r.s.Mine(tk.ID) {
		t.Fatal("the task is still scheduled here after its shard was lost")
	}
	if _, err := r.m.RunNow(context.Background(), "", tk.ID); !errors.Is(err, tasks.ErrNotOwner) {
		t.Fatalf("RunNow after the shard was lost: %v, want ErrNotOwner", err)
	}
}

// countingSource counts fetches per source URL and notes any that overlap.
type countingSource struct {
	mu       sync.Mutex
	fetches  map[string]int
	inFlight map[string]int
	overlaps int
	first    time.Time // the earliest fetch
}

func (c *countingSource) open(spec watch.Spec, _ *time.Location) (tasks.Source, error) {
	return sourceFunc(func(ctx context.Context) (watch.Result, error) {
		c.mu.Lock()
		if c.first.IsZero() {
			c.first = time.Now()
		}
		c.fetches[spec.URL]++
		c.inFlight[spec.URL]++
		if c.inFlight[spec.URL] > 1 {
			c.overlaps++
		}
		c.mu.Unlock()
		defer func() { c.mu.Lock(); c.inFlight[spec.URL]--; c.mu.Unlock() }()
		return watch.Result{Items: items(spec.URL, 2)}, nil
	}), nil
}

func (c *countingSource) counts() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.fetches))
	for k, v := range c.fetches {
		out[k] = v
	}
	return out, c.overlaps
}

type sourceFunc func(ctx context.Context) (watch.Result, error)

func (f sourceFunc) Fetch(ctx context.Context, _ watch.Conditional) (watch.Result, error) {
	return f(ctx)
}

// Two replicas on one Redis share its shards: each owns some, no shard is
// owned twice, every task's first check happens once across both (no
// repeat when a shard moves, no overlap), and the one left takes every
// shard once the other shuts down cleanly (I4, I5).
func TestI5_ReplicasShareShardsAndRunEachCheckOnce(t *testing.T) {
	url, prefix := redisForTest(t)
	const shards, ntasks = 8, 12
	src := &countingSource{fetches: map[string]int{}, inFlight: map[string]int{}}
	open := func(holder string) shardRep { return shardReplica(t, url, prefix, shards, holder, src) }
	a, b := open("replica-a"), open("replica-b")
	for k := range ntasks {
		if _, err := a.Submit(context.Background(), tasks.Submission{Principal: "console:admin",
			URL: fmt.Sprintf("https://news.example.edu/feed-%d.xml", k), Schedule: "every 1h", Notify: []string{"inbox:console:admin"}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(m shardRep) (context.CancelFunc, chan struct{}) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = m.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return cancel, done
	}
	stopA, doneA := run(a)
	deliverytest.WaitFor(t, func() bool { c, _ := src.counts(); return len(c) == ntasks && len(a.Shards().Mine) == shards })
	run(b)
	deliverytest.WaitFor(t, func() bool {
		ma, mb := a.Shards().Mine, b.Shards().Mine
		return len(ma) == shards/2 && len(mb) == shards/2
	})
	owned := map[int]string{}
	for name, m := range map[string]shardRep{"a": a, "b": b} {
		for _, i := range m.Shards().Mine {
			if prev, dup := owned[i]; dup {
				t.Fatalf("shard %d owned by %s and %s", i, prev, name)
			}
			owned[i] = name
		}
	}
	stopA()
	<-doneA
	deliverytest.WaitFor(t, func() bool { return len(b.Shards().Mine) == shards })
	src.wantOnceEach(t, "its baseline")
}

// wantOnceEach fails unless every source was checked exactly once, and
// no check overlapped another of the same task.
func (c *countingSource) wantOnceEach(t *testing.T, what string) {
	t.Helper()
	counts, overlaps := c.counts()
	for u, n := range counts {
		if n != 1 {
			t.Errorf("%s checked %d times, want once (%s)", u, n, what)
		}
	}
	if overlaps != 0 {
		t.Errorf("%d fetches overlapped another of the same task", overlaps)
	}
}

// shardReplica is a replica (catalog, scheduler, runner) on its own
// connection to a Redis store divided into shards, reading sources from src.
func shardReplica(t *testing.T, url, prefix string, shards int, holder string, src *countingSource) shardRep {
	t.Helper()
	st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e, err := engine.New(engine.Options{
		Store: st, Holder: holder, Log: zerolog.Nop(), LeaseTTL: 800 * time.Millisecond, StartSpread: -1, // checks at once, as the waits below expect
		Sources: tasks.SourceOpenerFunc(src.open),
		Policy:  tasks.Policy{Admins: []string{"console:admin"}, AllowedHosts: []string{"*.example.edu"}, Named: map[string]bool{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return shardRep{Manager: e.Catalog, eng: e, store: st}
}

// shardRep is one replica of shardReplica.
type shardRep struct {
	*tasks.Manager
	eng   *engine.Engine
	store store.Store
}

func (r shardRep) Run(ctx context.Context) error { return r.eng.Run(ctx) }
func (r shardRep) Shards() scheduler.ShardStatus { return r.eng.Scheduler.Shards() }
func (r shardRep) held() map[int]store.Lease     { return r.eng.Scheduler.Held() }
func (r shardRep) Owner() (bool, uint64)         { return r.eng.Scheduler.Owner() }

// A replica that gains the shards of one that died checks each of their
// tasks that is ten intervals overdue once, not ten times, and none before
// the dead replica's leases ran out (I4, I5).
func TestI4_GainedShardsRunTheirOverdueTasksOnce(t *testing.T) {
	url, prefix := redisForTest(t)
	const shards, ntasks = 4, 8
	src := &countingSource{fetches: map[string]int{}, inFlight: map[string]int{}}
	m := shardReplica(t, url, prefix, shards, "replica-b", src)
	ctx := context.Background()
	for k := range ntasks {
		tk, err := m.Submit(ctx, tasks.Submission{Principal: "console:admin",
			URL: fmt.Sprintf("https://news.example.edu/late-%d.xml", k), Schedule: "every 1h", Notify: []string{"inbox:console:admin"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(ctx, tk.ID, func(t *tasks.Task) error {
			t.LastRunEnd, t.NextRun = time.Now().Add(-10*time.Hour), time.Now().Add(-9*time.Hour)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The replica that owned every shard dies: it never renews again.
	sl := m.store.(store.ShardLeases)
	dead, err := sl.BalanceShards(ctx, "replica-a", 600*time.Millisecond, nil)
	if err != nil || len(dead.Mine) != shards {
		t.Fatalf("the first replica holds %d shards (%v)", len(dead.Mine), err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = m.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	deliverytest.WaitFor(t, func() bool { c, _ := src.counts(); return len(c) == ntasks })
	src.mu.Lock()
	first := src.first
	src.mu.Unlock()
	if first.Before(dead.Mine[0].Expires) {
		t.Fatalf("a task ran at %v, before the dead replica's leases ran out at %v", first, dead.Mine[0].Expires)
	}
	for _, tk := range mustList(t, m.Manager) {
		deliverytest.WaitFor(t, func() bool { cur, _ := m.Get(ctx, tk.ID); return cur.LastOutcome != "" })
	}
	src.wantOnceEach(t, "one recovery check after the takeover")
}

func mustList(t *testing.T, m *tasks.Manager) []*tasks.Task {
	t.Helper()
	list, err := m.List(context.Background(), "console:admin")
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// cutProxy forwards TCP to addr until cut; after that it refuses.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, addr string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// cut closes the listener and every forwarded connection: the store is
// unreachable from then on.
func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// A replica that cannot reach the store gives its shards up when their
// leases end, not before and not later than its next look: from then on
// another replica may own them (I5).
func TestI5_UnrenewedShardsAreGivenUpWhenTheirLeasesEnd(t *testing.T) {
	url, prefix := redisForTest(t)
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, opt.Addr)
	viaProxy := strings.Replace(url, opt.Addr, proxy.ln.Addr().String(), 1)
	src := &countingSource{fetches: map[string]int{}, inFlight: map[string]int{}}
	m := shardReplica(t, viaProxy, prefix, 4, "replica-a", src)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deliverytest.WaitFor(t, func() bool { return len(m.Shards().Mine) == 4 })
	proxy.cut()
	var last time.Time
	for _, l := range m.held() {
		if l.Expires.After(last) {
			last = l.Expires
		}
	}
	deliverytest.WaitFor(t, func() bool { return len(m.Shards().Mine) == 0 })
	if now := time.Now(); now.Before(last) {
		t.Fatalf("shards given up at %v, before their leases ended at %v", now, last)
	}
}
