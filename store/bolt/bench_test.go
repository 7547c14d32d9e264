package bolt

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

func benchEffect(i int64) store.Effect {
	return store.Effect{
		Key: fmt.Sprintf("effect-%016x", i), TaskID: fmt.Sprintf("task-%d", i%50), Recipient: "telegram:chat:1",
		Kind: "watch.changed", Payload: []byte(`{"title":"item changed","url":"https://example.edu/notice/1"}`),
	}
}

// BenchmarkLedgerClaim measures claims per second: one effect per Commit,
// from one caller and from many (where group commit shares the fsync).
func BenchmarkLedgerClaim(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := "fsync"
		if !sync {
			name = "nosync"
		}
		b.Run(name+"/sequential", func(b *testing.B) {
			s := openTest(b, Options{NoSync: !sync})
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{benchEffect(int64(i))}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			s := openTest(b, Options{NoSync: !sync})
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{benchEffect(n.Add(1))}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}

// BenchmarkLedgerBeginSettle measures one delivery's ledger round trip:
// Begin then Settle(Completed) on a claimed effect.
func BenchmarkLedgerBeginSettle(b *testing.B) {
	for _, par := range []bool{false, true} {
		name := "sequential"
		if par {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			s := openTest(b, Options{NoSync: true})
			ctx := context.Background()
			const chunk = 1000
			for i := 0; i < b.N; i += chunk {
				var es []store.Effect
				for j := i; j < min(i+chunk, b.N); j++ {
					es = append(es, benchEffect(int64(j)))
				}
				if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: es}); err != nil {
					b.Fatal(err)
				}
			}
			s.db.NoSync = false
			now := time.Now()
			one := func(i int64) error {
				key := benchEffect(i).Key
				if _, err := s.Ledger().Begin(ctx, key, "w", now); err != nil {
					return err
				}
				_, err := s.Ledger().Settle(ctx, key, store.Outcome{State: store.Completed, ProviderID: "m"}, now)
				return err
			}
			var n atomic.Int64
			b.ResetTimer()
			if !par {
				for i := range b.N {
					if err := one(int64(i)); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := one(n.Add(1) - 1); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "effects/s")
		})
	}
}
