package redis

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/storetest"
)

func TestI1_BackupIsOneConsistentView(t *testing.T) {
	src := newTestStore(t)
	storetest.RunBackup(t, src, storetest.Backup{
		Take: func(ctx context.Context, s store.Store, w io.Writer) error { return s.(*Store).Backup(ctx, w) },
		Restore: func(t *testing.T, snap []byte) store.Store {
			prefix := newPrefix(t)
			n, err := Restore(context.Background(), testURL(t), prefix, src.prefix, bytes.NewReader(snap))
			if err != nil || n == 0 {
				t.Fatalf("restore: %d keys, %v", n, err)
			}
			if _, err := Restore(context.Background(), testURL(t), prefix, src.prefix, bytes.NewReader(snap)); !errors.Is(err, ErrNotEmpty) {
				t.Errorf("a second restore over the keys: %v", err)
			}
			return openPrefix(t, prefix, nil)
		},
	})
}

// BenchmarkBackup10k measures the script that copies a store of 10,000
// effects: Redis answers nothing else while it runs.
func BenchmarkBackup10k(b *testing.B) {
	s := newTestStore(b)
	storetest.BenchBackup(b, s, 10000, s.Backup)
}
