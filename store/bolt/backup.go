package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.etcd.io/bbolt"
)

// Backup writes a copy of the whole file to w from one read transaction:
// a consistent snapshot while writers go on (bbolt's Tx.WriteTo). The
// effects held in the ledger log are checkpointed into the file first.
// The sending journal is left out: a restored store has none, so every
// attempt that was in flight recovers as one that may have been sent (I3).
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.ov.checkpoint(); err != nil {
		return fmt.Errorf("bolt: backup: %w", err)
	}
	return s.view(func(tx *bbolt.Tx) error {
		_, err := tx.WriteTo(w)
		return err
	})
}

// ErrExists means a restore found a store file where it would write one.
var ErrExists = errors.New("a store file already exists")

// Restore writes the snapshot r yields to path, which must not exist,
// and checks that it opens as a store this binary can serve; on any
// failure nothing is left at path.
func Restore(path string, r io.Reader) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bolt: restore to %s: %w", path, ErrExists)
	}
	tmp := path + ".restoring"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("bolt: restore: %w", err)
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = verify(tmp)
	}
	if err == nil {
		err = os.Link(tmp, path) // fails, rather than replaces, if path appeared meanwhile
	}
	_ = os.Remove(tmp)
	if err != nil {
		return fmt.Errorf("bolt: restore: %w", err)
	}
	return nil
}

// verify opens the restored file once: its schema is one this binary
// serves (older ones are migrated now).
func verify(path string) error {
	s, err := Open(path, Options{})
	if err == nil {
		err = s.Close()
	}
	_ = os.RemoveAll(newJournal(path).dir) // the check's own, empty ledger log
	return err
}
