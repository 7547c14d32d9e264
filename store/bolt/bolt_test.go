package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/storetest"
)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "herald.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) store.Store { return openTest(t, Options{}) },
		func(t *testing.T, old store.Store) store.Store {
			path := old.(*Store).Path()
			if err := old.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
}

// clock is an injected clock for TTL and lease tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)} }

func TestSchemaNewerRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bktMeta).Put(keySchema, u64(SchemaVersion+1)) })
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("Open on a newer schema = %v, want ErrNewerSchema", err)
	}
}

func TestSchemaRecordedAndBucketsDistinct(t *testing.T) {
	s := openTest(t, Options{})
	err := s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bktMeta).Get(keySchema); binaryU64(v) != SchemaVersion {
			t.Errorf("schema = %d, want %d", binaryU64(v), SchemaVersion)
		}
		for _, b := range [][]byte{bktCatalog, bktSnapshots, bktFxClaim, bktFxBody, bktFxState, bktFxQueue, bktFxTask, bktFxFlight, bktLeases, bktDedup, bktInbox, bktRuns, bktDialogs, bktChannels} {
			if tx.Bucket(b) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTTLOnInjectedClockAndSweep(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := openTest(t, Options{Now: clk.Now})
	if first, _ := s.Dedup().Mark(ctx, "ns", "1", time.Minute); !first {
		t.Fatal("first mark not first")
	}
	if err := s.Dialogs().Put(ctx, "chat", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Channels().Put(ctx, "offset", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(59 * time.Second)
	if first, _ := s.Dedup().Mark(ctx, "ns", "1", time.Minute); first {
		t.Fatal("mark expired early")
	}
	if _, err := s.Dialogs().Get(ctx, "chat"); err != nil {
		t.Fatalf("dialog expired early: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := s.Dialogs().Get(ctx, "chat"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("dialog after ttl: %v", err)
	}
	// The mark was refreshed at +59s by the second Mark? No: a repeated
	// Mark of a live id does not extend it.
	n, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("swept %d, want 2 (mark and dialog)", n)
	}
	if v, err := s.Channels().Get(ctx, "offset"); err != nil || string(v) != "1" {
		t.Fatalf("entry without ttl swept: %q %v", v, err)
	}
	if first, _ := s.Dedup().Mark(ctx, "ns", "1", time.Minute); !first {
		t.Fatal("mark survived its ttl")
	}
}

func TestLeaseExpiryOnInjectedClock(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	l := openTest(t, Options{Now: clk.Now}).Leases()
	a, err := l.Acquire(ctx, "scheduler", "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(9 * time.Second)
	if _, err := l.Acquire(ctx, "scheduler", "b", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("before expiry: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := l.Renew(ctx, a, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew after expiry: %v", err)
	}
	b, err := l.Acquire(ctx, "scheduler", "b", time.Second)
	if err != nil || b.Epoch != a.Epoch+1 {
		t.Fatalf("takeover = %+v, %v", b, err)
	}
}

func TestClosedStoreUnavailable(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Catalog().Put(ctx, store.Fence{}, "t", 0, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write after close: %v", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("ping after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCancelledContextCommitsNothing(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{{Key: "k"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("commit on a cancelled context: %v", err)
	}
	if _, err := s.Ledger().Get(context.Background(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim landed: %v", err)
	}
}

// A refused write in a shared transaction must not undo its neighbours.
func TestGroupCommitIsolatesRefusals(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if _, err := s.Catalog().Put(ctx, store.Fence{}, "t", 0, nil); err != nil {
		t.Fatal(err)
	}
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rev := uint64(1)
			if i%2 == 1 {
				rev = 7 // stale: refused
			}
			_, errs[i] = s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", TaskRevision: rev,
				Effects: []store.Effect{{Key: "k" + string(rune('A'+i))}}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 1 && !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale commit %d: %v", i, err)
		}
		if i%2 == 0 && err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		_, gerr := s.Ledger().Get(ctx, "k"+string(rune('A'+i)))
		if (i%2 == 0) != (gerr == nil) {
			t.Fatalf("effect %d stored = %v", i, gerr)
		}
	}
}

func TestInvalidCommitRollsBackWholeRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	_, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Snapshot: []byte("s"),
		Effects: []store.Effect{{Key: "ok"}, {Key: ""}}})
	if err == nil {
		t.Fatal("commit with an empty key accepted")
	}
	if _, err := s.Snapshots().Get(ctx, "t"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("snapshot of a refused commit: %v", err)
	}
	if _, err := s.Ledger().Get(ctx, "ok"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim of a refused commit: %v", err)
	}
}

// A write failing mid-transaction rolls the shared batch back; every other
// write in it must still land, on its own.
func TestGroupCommitFallbackKeepsNeighbours(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const n = 48
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("k%02d", i)
			effects := []store.Effect{{Key: key}}
			if i%3 == 0 {
				effects = append(effects, store.Effect{}) // invalid: no key
			}
			_, errs[i] = s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: effects})
		})
	}
	wg.Wait()
	for i := range n {
		_, gerr := s.Ledger().Get(ctx, fmt.Sprintf("k%02d", i))
		if i%3 == 0 {
			if errs[i] == nil || !errors.Is(gerr, store.ErrNotFound) {
				t.Fatalf("invalid commit %d: err %v, stored %v", i, errs[i], gerr)
			}
			continue
		}
		if errs[i] != nil || gerr != nil {
			t.Fatalf("valid commit %d: err %v, get %v", i, errs[i], gerr)
		}
	}
}
