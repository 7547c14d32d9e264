package storetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/herald-bridge/herald/store"
)

// Backup is how a backend copies itself (Backup) and what a copy
// restores into (a fresh store of the same backend).
type Backup struct {
	Take    func(ctx context.Context, s store.Store, w io.Writer) error
	Restore func(t *testing.T, snapshot []byte) store.Store
}

// RunBackup checks that a backup taken while a writer commits runs is one
// consistent view — a task's snapshot and the claims committed with it
// are both in the copy or both not (I1) — and that tasks, an effect in
// flight, inboxes and channel state come back as they were.
func RunBackup(t *testing.T, s store.Store, b Backup) {
	ctx := context.Background()
	now := base()
	rec := must(s.Catalog().Put(ctx, store.Fence{}, "t-1", 0, []byte(`{"id":"t-1"}`)))(t)
	commit(t, s, "t-1", effect("t-1", "fx-flight", now))
	inflight := must(s.Ledger().Begin(ctx, "fx-flight", "worker-a", 0, now))(t)
	must(s.Inbox().Append(ctx, store.InboxItem{Principal: "console:a", EffectKey: "fx-flight", Title: "hello", Body: []byte("{}"), CreatedAt: now}, 0))(t)
	noErr(t, s.Channels().Put(ctx, "offset", []byte("42"), 0))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the load: run n commits snapshot "n" with claim load-n
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			fx := effect("load", fmt.Sprintf("load-%d", n), now)
			if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "load", Snapshot: []byte(fmt.Sprint(n)), Effects: []store.Effect{fx}}); err != nil {
				t.Errorf("commit under load: %v", err)
				return
			}
		}
	}()
	waitFor(t, "the load runs", func() bool { _, err := s.Snapshots().Get(ctx, "load"); return err == nil })
	var buf bytes.Buffer
	err := b.Take(ctx, s, &buf)
	close(stop)
	wg.Wait()
	noErr(t, err)

	r := b.Restore(t, buf.Bytes())
	got := must(r.Catalog().Get(ctx, "t-1"))(t)
	if got.Revision != rec || string(got.Value) != `{"id":"t-1"}` {
		t.Errorf("task after restore: %+v", got)
	}
	fx := must(r.Ledger().Get(ctx, "fx-flight"))(t)
	if fx.State != store.Pending || !fx.InFlight || fx.Worker != "worker-a" || len(fx.Attempts) != len(inflight.Attempts) {
		t.Errorf("the in-flight effect after restore: %+v", fx)
	}
	if items := must(r.Inbox().List(ctx, "console:a", store.InboxQuery{}))(t); len(items) != 1 || items[0].Title != "hello" {
		t.Errorf("inbox after restore: %+v", items)
	}
	if v := must(r.Channels().Get(ctx, "offset"))(t); string(v) != "42" {
		t.Errorf("channel state after restore: %q", v)
	}
	snap := must(r.Snapshots().Get(ctx, "load"))(t)
	var last int
	fmt.Sscan(string(snap), &last)
	claims := must(r.Ledger().List(ctx, "load", 0))(t)
	if len(claims) != last+1 {
		t.Fatalf("the copy has snapshot %d but %d claims of the load: not one consistent view", last, len(claims))
	}
	if _, err := r.Ledger().Get(ctx, fmt.Sprintf("load-%d", last)); err != nil {
		t.Errorf("the claim committed with the copied snapshot is missing: %v", err)
	}
}

// BenchBackup measures take copying s once it holds n runs of one claim
// each across 100 tasks, with their snapshots.
func BenchBackup(b *testing.B, s store.Store, n int, take func(ctx context.Context, w io.Writer) error) {
	ctx := context.Background()
	now := base()
	for i := range n {
		task := fmt.Sprintf("t-%d", i%100)
		fx := effect(task, fmt.Sprintf("fill-%d", i), now)
		if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: task, Snapshot: []byte(fmt.Sprint(i)), Effects: []store.Effect{fx}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		var buf bytes.Buffer
		if err := take(ctx, &buf); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(buf.Len()), "bytes")
	}
}
