package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/store/storetest"
)

// testURL returns the Redis server the tests use (redistest.URL).
func testURL(t testing.TB) string { return redistest.URL(t) }

// newPrefix returns a key prefix no other test run uses, and removes every
// key under it when the test ends.
func newPrefix(t testing.TB) string {
	t.Helper()
	_, prefix := redistest.Prefix(t)
	return prefix
}

// openPrefix opens a store on prefix and closes it when the test ends.
func openPrefix(t testing.TB, prefix string, now func() time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), testURL(t), Options{KeyPrefix: prefix, Now: now})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newTestStore(t testing.TB) *Store {
	t.Helper()
	return openPrefix(t, newPrefix(t), nil)
}

func TestConformance(t *testing.T) {
	testURL(t)
	open := func(t *testing.T) store.Store { return newTestStore(t) }
	reopen := func(t *testing.T, old store.Store) store.Store {
		s := old.(*Store)
		if err := s.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		return openPrefix(t, s.keys.prefix, nil)
	}
	storetest.Run(t, open, reopen)
}

// fakeClock is an injected clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func effect(task, key string) store.Effect {
	return store.Effect{Key: key, TaskID: task, Recipient: "inbox:console:test", Kind: "watch.changed", Payload: []byte(`{}`)}
}

// Two replicas (two clients on the same keys) claim the same effect keys
// at once: each key is claimed exactly once.
func TestI1_ConcurrentClaimAcrossReplicasOneWinner(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix(t)
	replicas := []*Store{openPrefix(t, prefix, nil), openPrefix(t, prefix, nil)}
	const callers, keys = 16, 8
	claimed := make([]atomic.Int32, keys)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			var effects []store.Effect
			for k := range keys {
				effects = append(effects, effect("t1", fmt.Sprint("key-", k)))
			}
			res, err := replicas[i%2].Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Effects: effects})
			if err != nil {
				errs <- err
				return
			}
			for _, k := range res.Claimed {
				var n int
				fmt.Sscanf(k, "key-%d", &n)
				claimed[n].Add(1)
			}
			if len(res.Claimed)+len(res.Duplicates) != keys {
				errs <- fmt.Errorf("result covers %d keys, want %d", len(res.Claimed)+len(res.Duplicates), keys)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for k := range keys {
		if n := claimed[k].Load(); n != 1 {
			t.Errorf("key-%d claimed %d times, want 1", k, n)
		}
	}
	due, err := replicas[0].Ledger().Due(ctx, time.Now().Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != keys {
		t.Fatalf("queued %d effects, want %d", len(due), keys)
	}
}

// Workers on two replicas race to begin the same effect: one wins, the
// rest are refused with ErrIllegalTransition, and one attempt is recorded.
func TestBeginRaceAcrossReplicasOneWinner(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix(t)
	replicas := []*Store{openPrefix(t, prefix, nil), openPrefix(t, prefix, nil)}
	if _, err := replicas[0].Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Effects: []store.Effect{effect("t1", "k")}}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var won atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := replicas[i%2].Ledger().Begin(ctx, "k", fmt.Sprint("w", i), 0, time.Now())
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, store.ErrIllegalTransition):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("loser error = %v, want ErrIllegalTransition", err)
	}
	if won.Load() != 1 {
		t.Fatalf("%d winners, want 1", won.Load())
	}
	e, err := replicas[1].Ledger().Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !e.InFlight || len(e.Attempts) != 1 {
		t.Fatalf("effect after the race = %+v", e)
	}
}

// Replica a owns the scheduler lease; its lease runs out on the injected
// clock and b takes over with a higher epoch; a's late commit and catalog
// writes are refused, b's land.
func TestI5_FenceEpochAfterTakeover(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	prefix := newPrefix(t)
	a, b := openPrefix(t, prefix, clock.Now), openPrefix(t, prefix, clock.Now)

	la, err := a.Leases().Acquire(ctx, "scheduler", "replica-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Leases().Acquire(ctx, "scheduler", "replica-b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("acquire while held = %v, want ErrLeaseHeld", err)
	}
	fa := store.Fence{Lease: "scheduler", Epoch: la.Epoch}
	if _, err := a.Catalog().Put(ctx, fa, "t1", 0, []byte("v1")); err != nil {
		t.Fatal(err)
	}

	clock.Advance(time.Minute)
	if _, err := a.Leases().Renew(ctx, la, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew after expiry = %v, want ErrLeaseLost", err)
	}
	lb, err := b.Leases().Acquire(ctx, "scheduler", "replica-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Epoch <= la.Epoch {
		t.Fatalf("takeover epoch %d, want > %d", lb.Epoch, la.Epoch)
	}

	tests := []struct {
		name string
		op   func() error
	}{
		{"commit", func() error {
			_, err := a.Ledger().Commit(ctx, store.RunCommit{Fence: fa, TaskID: "t1", TaskRevision: 1,
				Snapshot: []byte("late"), Effects: []store.Effect{effect("t1", "late")}})
			return err
		}},
		{"put", func() error { _, err := a.Catalog().Put(ctx, fa, "t1", 1, []byte("late")); return err }},
		{"delete", func() error { return a.Catalog().Delete(ctx, fa, "t1", 1) }},
		{"future epoch", func() error {
			_, err := a.Catalog().Put(ctx, store.Fence{Lease: "scheduler", Epoch: lb.Epoch + 1}, "t1", 1, nil)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, store.ErrStaleEpoch) {
				t.Fatalf("error = %v, want ErrStaleEpoch", err)
			}
		})
	}
	if _, err := a.Ledger().Get(ctx, "late"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stale commit claimed its effect: %v", err)
	}
	fb := store.Fence{Lease: "scheduler", Epoch: lb.Epoch}
	res, err := b.Ledger().Commit(ctx, store.RunCommit{Fence: fb, TaskID: "t1", TaskRevision: 1,
		Snapshot: []byte("s"), Effects: []store.Effect{effect("t1", "late")}})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("current owner's commit = %+v, %v", res, err)
	}
}

// Concurrent compare-and-swap writers on one revision: exactly one wins.
func TestCatalogCASOneWinner(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Catalog().Put(ctx, store.Fence{}, "t1", 0, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var won atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rev, err := s.Catalog().Put(ctx, store.Fence{}, "t1", 1, []byte(fmt.Sprint("v2-", i)))
			switch {
			case err == nil && rev == 2:
				won.Add(1)
			case !errors.Is(err, store.ErrConflict):
				errs <- fmt.Errorf("rev %d, err %v", rev, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("loser: %v, want ErrConflict", err)
	}
	if won.Load() != 1 {
		t.Fatalf("%d winners, want 1", won.Load())
	}
}

// The objects live under their own key prefixes, and the ledger family
// shares the {prefix} hash tag.
func TestKeyLayout(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	p, tag := s.keys.prefix, s.keys.tagged
	if _, err := s.Catalog().Put(ctx, store.Fence{}, "t1", 0, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leases().Acquire(ctx, "scheduler", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t1", Snapshot: []byte("s"), Effects: []store.Effect{effect("t1", "k1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "console:ops", EffectKey: "k1", Title: "x"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Dedup().Mark(ctx, "telegram", "1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Runs().Append(ctx, "t1", []byte("r"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Dialogs().Put(ctx, "c", []byte("d"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Channels().Put(ctx, "c", []byte("d"), 0); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		tag + "schema", tag + "task:rec:t1", tag + "task:ids", tag + "snap:t1", tag + "fx:e:k1", tag + "fx:t:t1",
		tag + "q", tag + "lease:h:scheduler", tag + "lease:n:scheduler",
		p + "inbox:{console:ops}:items", p + "dd:8:telegram:1", p + "runs:t1", p + "dlg:c", p + "chan:c",
	} {
		n, err := s.rdb.Exists(ctx, key).Result()
		if err != nil || n != 1 {
			t.Errorf("key %q missing (%v)", key, err)
		}
	}
	if ttl := s.rdb.PTTL(ctx, p+"dlg:c").Val(); ttl <= 0 {
		t.Errorf("dialog entry without expiry: %v", ttl)
	}
	if ttl := s.rdb.PTTL(ctx, p+"chan:c").Val(); ttl != -1 {
		t.Errorf("channel entry expires: %v", ttl)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	prefix := newPrefix(t)
	openPrefix(t, prefix, nil)
	rdb := openPrefix(t, prefix, nil).rdb
	if err := rdb.Set(context.Background(), "{"+prefix+"}schema", SchemaVersion+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), testURL(t), Options{KeyPrefix: prefix})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("open = %v, want ErrNewerSchema", err)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// An unreachable server is ErrUnavailable, and the error carries neither
// the URL nor its password (I10).
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cret-pass"
	_, err := Open(ctx, "redis://:"+secret+"@"+closedAddr(t)+"/0", Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("open = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error leaks the password: %v", err)
	}
	_, err = Open(ctx, "redis://:"+secret+"@127.0.0.1:6379/notadb", Options{})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("bad url error = %v", err)
	}

	s := newTestStore(t)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	s.Close()
	checks := map[string]error{"ping": s.Ping(ctx)}
	_, checks["commit"] = s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{effect("t", "k")}})
	_, checks["begin"] = s.Ledger().Begin(ctx, "k", "w", 0, time.Now())
	_, checks["mark"] = s.Dedup().Mark(ctx, "ns", "id", time.Minute)
	for op, err := range checks {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed client = %v, want ErrUnavailable", op, err)
		}
	}
	// Logic errors are not outages.
	live := newTestStore(t)
	if _, err := live.Ledger().Get(ctx, "absent"); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get absent = %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{"herald:", true},
		{"herald{x}:", false},
		{"a}", false},
	}
	for _, tt := range tests {
		o := Options{KeyPrefix: tt.prefix}
		err := o.validate()
		if (err == nil) != tt.ok {
			t.Errorf("prefix %q: err = %v", tt.prefix, err)
		}
		if err == nil && (o.KeyPrefix == "" || o.Now == nil) {
			t.Errorf("prefix %q: defaults not applied: %+v", tt.prefix, o)
		}
	}
}

func BenchmarkLedgerClaim(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	var seq atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprint("k", seq.Add(1))
			if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "bench", Effects: []store.Effect{effect("bench", k)}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}

func BenchmarkLedgerBeginSettle(b *testing.B) {
	s := newTestStore(b)
	ctx := context.Background()
	const batch = 200
	for i := 0; i < b.N; i += batch {
		var effects []store.Effect
		for j := i; j < min(i+batch, b.N); j++ {
			effects = append(effects, effect("bench", fmt.Sprint("k", j)))
		}
		if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "bench", Effects: effects}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprint("k", next.Add(1)-1)
			now := time.Now()
			if _, err := s.Ledger().Begin(ctx, k, "w", 0, now); err != nil {
				b.Error(err)
				return
			}
			if err := s.Ledger().Sending(ctx, "w", []store.AttemptRef{{Key: k, N: 1}}); err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Ledger().Settle(ctx, k, store.Outcome{State: store.Completed}, now); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "effects/s")
}
