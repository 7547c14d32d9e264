package bolt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/storetest"
)

func TestI1_BackupIsOneConsistentView(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "herald.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.RunBackup(t, s, storetest.Backup{
		Take: func(ctx context.Context, s store.Store, w io.Writer) error { return s.(*Store).Backup(ctx, w) },
		Restore: func(t *testing.T, snap []byte) store.Store {
			path := filepath.Join(t.TempDir(), "restored.db")
			if err := Restore(path, bytes.NewReader(snap)); err != nil {
				t.Fatal(err)
			}
			if err := Restore(path, bytes.NewReader(snap)); !errors.Is(err, ErrExists) {
				t.Errorf("a second restore over the file: %v", err)
			}
			r, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		},
	})
}

// TestRestore_LeavesNothingOfABadSnapshot: bytes that are not a store
// are refused and no file is left behind.
func TestRestore_LeavesNothingOfABadSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "herald.db")
	if err := Restore(path, bytes.NewReader(bytes.Repeat([]byte("x"), 8192))); err == nil {
		t.Fatal("restored garbage")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// BenchmarkBackup10k measures copying a store of 10,000 effects.
func BenchmarkBackup10k(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "herald.db"), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchBackup(b, s, 10000, s.Backup)
}
