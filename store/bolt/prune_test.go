package bolt

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Claims arrive at the end of the claim order while pruning walks it: a
// pass that meets claims younger than its cutoff starts the next one over
// from the oldest, instead of stepping on through young claims and leaving
// the old ones behind it until it has walked the whole file.
func TestRetention_APassStartsOverAtTheYoungClaims(t *testing.T) {
	scan := pruneScan
	pruneScan = 5
	t.Cleanup(func() { pruneScan = scan })
	t0 := time.Now().Truncate(time.Second)
	clock := t0
	s := openTest(t, Options{Now: func() time.Time { return clock }})
	ctx := context.Background()
	claim := func(from, to int, at time.Time) {
		for i := from; i < to; i++ {
			k := fmt.Sprintf("k%02d", i)
			handOff(t, s, k)
			if _, err := s.Ledger().Settle(ctx, k, store.Outcome{State: store.Completed}, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	claim(0, 10, t0)
	if n, err := s.Prune(ctx, t0.Add(-time.Second)); n != 0 || err != nil {
		t.Fatalf("pruned %d before anything was old: %v", n, err)
	}
	clock = t0.Add(2 * time.Hour)
	claim(10, 20, clock)
	pruned := 0
	for range 3 {
		n, err := s.Prune(ctx, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		pruned += n
	}
	if pruned != 10 {
		t.Fatalf("three passes pruned %d of the 10 old effects", pruned)
	}
	if _, err := s.Ledger().Get(ctx, "k15"); err != nil {
		t.Fatalf("a young effect went: %v", err)
	}
}
