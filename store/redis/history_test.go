package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// TestHistory_ReplicasShareOneHistory: two replicas (two clients on the
// same keys) write turns to one log at once; each finds all of them, and
// a forget on one leaves nothing findable on the other.
func TestHistory_ReplicasShareOneHistory(t *testing.T) {
	prefix := newPrefix(t)
	a, b := openPrefix(t, prefix, nil), openPrefix(t, prefix, nil)
	ctx := context.Background()
	now := time.Now()
	var wg sync.WaitGroup
	for r, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				tr := store.Turn{Log: "telegram:chat:-100", Principal: fmt.Sprintf("telegram:%d", r+1), Text: fmt.Sprint(r, "/", i),
					At: now, Terms: []string{"考试", "考", "试", fmt.Sprint("r", r)}}
				if _, err := s.History().Append(ctx, tr, 30, now.Add(-time.Hour)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range []*Store{a, b} {
		got, err := s.History().Search(ctx, "telegram:chat:-100", []string{"考试"}, store.HistoryQuery{Limit: 100})
		if err != nil || len(got) != 30 {
			t.Fatalf("found %d of the 30 kept, %v", len(got), err)
		}
	}
	if n, err := a.History().Forget(ctx, "telegram:chat:-100", "telegram:2"); err != nil || n == 0 {
		t.Fatalf("forget: %d, %v", n, err)
	}
	got, err := b.History().Search(ctx, "telegram:chat:-100", []string{"r1"}, store.HistoryQuery{Limit: 100})
	if err != nil || len(got) != 0 {
		t.Fatalf("replica b still finds %d forgotten turns (%v)", len(got), err)
	}
	if n, err := b.History().Forget(ctx, "telegram:chat:-100", ""); err != nil || n == 0 {
		t.Fatalf("forget all: %d, %v", n, err)
	}
	keys, err := a.rdb.Keys(ctx, prefix+"hist:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != prefix+"hist:{telegram:chat:-100}:seq" {
			t.Errorf("key %s left after forgetting everything", k)
		}
	}
}
