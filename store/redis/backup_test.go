package redis

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/storetest"
)

func TestI1_BackupIsOneConsistentView(t *testing.T) {
	src := newTestStore(t)
	storetest.RunBackup(t, src, storetest.Backup{
		Take: func(ctx context.Context, s store.Store, w io.Writer) error { return s.(*Store).Backup(ctx, w) },
		Restore: func(t *testing.T, snap []byte) store.Store {
			prefix := newPrefix(t)
			n, err := Restore(context.Background(), testURL(t), prefix, src.keys.prefix, bytes.NewReader(snap))
			if err != nil || n == 0 {
				t.Fatalf("restore: %d keys, %v", n, err)
			}
			if _, err := Restore(context.Background(), testURL(t), prefix, src.keys.prefix, bytes.NewReader(snap)); !errors.Is(err, ErrNotEmpty) {
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

// TestI5_RestoredLeasesAreFreeAndEpochsGrow: a restored store holds no
// lease of the process the backup came from, and the next owner's epoch
// is above every epoch handed out before.
func TestI5_RestoredLeasesAreFreeAndEpochsGrow(t *testing.T) {
	ctx := context.Background()
	src := newTestStore(t)
	old, err := src.Leases().Acquire(ctx, "scheduler", "old-host", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	prefix := newPrefix(t)
	if _, err := Restore(ctx, testURL(t), prefix, src.keys.prefix, &buf); err != nil {
		t.Fatal(err)
	}
	l, err := openPrefix(t, prefix, nil).Leases().Acquire(ctx, "scheduler", "new-host", time.Hour)
	if err != nil {
		t.Fatalf("the restored store still holds the old lease: %v", err)
	}
	if l.Epoch <= old.Epoch {
		t.Fatalf("epoch %d after a restore, not above %d", l.Epoch, old.Epoch)
	}
}
