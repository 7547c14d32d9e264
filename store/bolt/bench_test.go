package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// reportCommits adds the committer's writes per transaction and time per
// transaction to a benchmark's metrics.
func reportCommits(b *testing.B, s *Store, from *[4]int64) {
	st := &s.gc.stats
	txs, calls, busy := st.txs.Load()-from[0], st.calls.Load()-from[1], st.busy.Load()-from[2]
	pages := dbWrites(s) - from[3]
	if txs > 0 {
		b.ReportMetric(float64(calls)/float64(txs), "writes/tx")
		b.ReportMetric(float64(busy)/float64(txs)/1e6, "ms/tx")
		b.ReportMetric(float64(pages)/float64(txs), "pagewrites/tx")
	}
}

func commitMark(s *Store) [4]int64 {
	st := &s.gc.stats
	return [4]int64{st.txs.Load(), st.calls.Load(), st.busy.Load(), dbWrites(s)}
}

// benchPayload is the size of a typical rendered notice.
var benchPayload = []byte(`{"title":"item changed","url":"https://example.edu/notice/1","body":"` +
	strings.Repeat("The notice changed: new deadline, new room, new reading list. ", 8) + `"}`)

// benchKey is an effect key shaped like the real ones: a hash, so
// consecutive claims land anywhere in key order.
func benchKey(i int64) string {
	h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	return "fx_" + hex.EncodeToString(h[:16])
}

// benchHistory is how many settled effects a benchmark ledger already
// holds, as a ledger does after some days of service.
const benchHistory = 20000

// preload claims effects [from, to) in chunks without fsync.
func preload(b *testing.B, s *Store, from, to int64) {
	ctx := context.Background()
	s.db.NoSync = true
	defer func() { s.db.NoSync = false }()
	const chunk = 1000
	for i := from; i < to; i += chunk {
		var es []store.Effect
		for j := i; j < min(i+chunk, to); j++ {
			es = append(es, benchEffect(j))
		}
		if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: es}); err != nil {
			b.Fatal(err)
		}
	}
}

// settleHistory completes effects [from, to) without fsync.
func settleHistory(b *testing.B, s *Store, from, to int64) {
	ctx := context.Background()
	s.db.NoSync = true
	defer func() { s.db.NoSync = false }()
	now := time.Now()
	for i := from; i < to; i++ {
		key := benchKey(i)
		if _, err := s.Ledger().Begin(ctx, key, "w", 0, now); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Ledger().Settle(ctx, key, store.Outcome{State: store.Completed, ProviderID: "m"}, now); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEffect(i int64) store.Effect {
	return store.Effect{
		Key: benchKey(i), TaskID: fmt.Sprintf("task-%d", i%50), Recipient: "telegram:chat:1",
		Kind: "watch.changed", Payload: benchPayload,
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
			preload(b, s, 0, benchHistory)
			s.db.NoSync = !sync
			mark := commitMark(s)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{benchEffect(benchHistory + int64(i))}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
			reportCommits(b, s, &mark)
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			s := openTest(b, Options{NoSync: !sync})
			ctx := context.Background()
			preload(b, s, 0, benchHistory)
			s.db.NoSync = !sync
			var n atomic.Int64
			n.Store(benchHistory)
			b.SetParallelism(32)
			mark := commitMark(s)
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
			reportCommits(b, s, &mark)
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
			s := openTest(b, Options{})
			ctx := context.Background()
			preload(b, s, 0, benchHistory+int64(b.N))
			settleHistory(b, s, 0, benchHistory)
			now := time.Now()
			one := func(i int64) error {
				key := benchKey(benchHistory + i)
				if _, err := s.Ledger().Begin(ctx, key, "w", 0, now); err != nil {
					return err
				}
				if err := s.Ledger().Sending(ctx, "w", []store.AttemptRef{{Key: key, N: 1}}); err != nil {
					return err
				}
				_, err := s.Ledger().Settle(ctx, key, store.Outcome{State: store.Completed, ProviderID: "m"}, now)
				return err
			}
			var n atomic.Int64
			mark := commitMark(s)
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
			reportCommits(b, s, &mark)
		})
	}
}

// dbWrites is how many page writes the file has seen.
func dbWrites(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}

// BenchmarkInboxAppendFull appends to an inbox at its cap that nobody
// reads (a flood of notices): each append drops the oldest item, and
// should cost that item, not a decode of the whole inbox.
func BenchmarkInboxAppendFull(b *testing.B) {
	s := openTest(b, Options{NoSync: true})
	ctx := context.Background()
	for i := range store.InboxCap {
		if _, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "console:bench", EffectKey: fmt.Sprintf("fx-%d", i), Title: "n", Body: benchPayload}, store.InboxCap); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "console:bench", EffectKey: fmt.Sprintf("fy-%d", i), Title: "n", Body: benchPayload}, store.InboxCap); err != nil {
			b.Fatal(err)
		}
	}
}
