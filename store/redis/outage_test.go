package redis

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// cutProxy forwards TCP to Redis until cut; while cut it closes every
// connection, old and new, as a Redis that went away would.
type cutProxy struct {
	ln      net.Listener
	target  string
	refused atomic.Int64

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T) *cutProxy {
	t.Helper()
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *cutProxy) pipe(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		p.refused.Add(1)
		c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

// TestSettleRidesOutAnOutage: an outcome reported while Redis is away is
// recorded once it is back, instead of leaving the effect in flight under
// a live worker for good.
func TestSettleRidesOutAnOutage(t *testing.T) {
	p := newCutProxy(t)
	opt, err := goredis.ParseURL(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.Addr = p.ln.Addr().String()
	ctx := context.Background()
	s, err := New(ctx, goredis.NewClient(opt), Options{KeyPrefix: newPrefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Effects: []store.Effect{effect("t1", "k")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ledger().Begin(ctx, "k", "w1", 0, time.Now()); err != nil {
		t.Fatal(err)
	}

	p.setCut(true)
	type result struct {
		e   store.Effect
		err error
	}
	done := make(chan result, 1)
	go func() {
		e, err := s.Ledger().Settle(ctx, "k", store.Outcome{State: store.Completed, ProviderID: "p-1"}, time.Now())
		done <- result{e, err}
	}()
	for p.refused.Load() < 3 { // Settle has met the outage more than once
		select {
		case r := <-done:
			t.Fatalf("Settle returned during the outage: %v", r.err)
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
	p.setCut(false)
	r := <-done
	if r.err != nil {
		t.Fatalf("Settle after the outage: %v", r.err)
	}
	got, err := s.Ledger().Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.Completed || got.InFlight || len(got.Attempts) != 1 || got.ProviderID != "p-1" {
		t.Fatalf("effect after the outage = %s in flight %t attempts %d provider %q", got.State, got.InFlight, len(got.Attempts), got.ProviderID)
	}
}

// TestRetryAfterLostReplyFindsItsOwnWrite: when the reply to a published
// Begin or Settle is lost, the retry recognises its own write and reports
// success without a second attempt or outcome, and never settles an
// attempt another worker began since.
func TestRetryAfterLostReplyFindsItsOwnWrite(t *testing.T) {
	s := newTestStore(t)
	l := s.ledger
	ctx := context.Background()
	if _, err := l.Commit(ctx, store.RunCommit{TaskID: "t1", Effects: []store.Effect{effect("t1", "k")}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := l.begin(ctx, "k", "w1", 0, t0, false); err != nil {
		t.Fatal(err)
	}
	e, err := l.begin(ctx, "k", "w1", 0, t0, true)
	if err != nil || len(e.Attempts) != 1 || !e.InFlight {
		t.Fatalf("begin retry = %d attempts, in flight %t, %v; want the one attempt", len(e.Attempts), e.InFlight, err)
	}
	if _, err := l.begin(ctx, "k", "w2", 0, t0, true); err == nil {
		t.Fatal("another worker's begin retry took the in-flight effect")
	}

	t1 := t0.Add(time.Millisecond)
	retryLater := store.Outcome{State: store.Pending, RetryAt: t1}
	if _, err := l.settle(ctx, "k", retryLater, t1, false); err != nil {
		t.Fatal(err)
	}
	t2 := t1.Add(time.Millisecond)
	if _, err := l.Begin(ctx, "k", "w2", 1, t2); err != nil { // another worker picked it up again
		t.Fatal(err)
	}
	if _, err := l.settle(ctx, "k", retryLater, t1, true); err != nil {
		t.Fatalf("settle retry: %v", err)
	}
	if got, _ := l.Get(ctx, "k"); !got.InFlight || got.Worker != "w2" || len(got.Attempts) != 2 {
		t.Fatalf("settle retry touched w2's attempt: in flight %t worker %q attempts %d", got.InFlight, got.Worker, len(got.Attempts))
	}
}
