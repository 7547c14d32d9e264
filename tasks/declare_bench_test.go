package tasks

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
)

// BenchmarkDeclare10k applies a file of 10,000 new tasks to an empty
// embedded store: batched, a few transactions for all of them.
func BenchmarkDeclare10k(b *testing.B) {
	decls := manyDeclared(10_000, "")
	for range b.N {
		b.StopTimer()
		st, err := bolt.Open(filepath.Join(b.TempDir(), "herald.db"), bolt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		m, err := New(Options{Store: st, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		tx := st.CommitStats().Transactions
		b.StartTimer()
		if err := m.SetDeclared(context.Background(), decls); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(st.CommitStats().Transactions-tx), "tx")
		st.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/10_000, "µs/task")
}
