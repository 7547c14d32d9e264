package bolt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

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

// ErrInterruptedRestore means a restore was stopped before it switched:
// its copy lies at RestoringPath and there is no store. Open creates none
// beside it; restoring again replaces the copy.
var ErrInterruptedRestore = errors.New("a restore did not finish")

// RestoringPath is where Restore writes and checks its copy before it
// switches the copy to path. A file there is the copy of a restore that
// was stopped: it never served.
func RestoringPath(path string) string { return path + ".restoring" }

// RestoreLeftovers names what a restore to path that was stopped can
// leave: its copy and the ledger log its check opened. The next restore
// replaces them.
func RestoreLeftovers(path string) []string {
	tmp := RestoringPath(path)
	return []string{tmp, newJournal(tmp).dir}
}

// Restore writes the snapshot r yields to path, which must not exist.
// The copy is written beside path (RestoringPath) and checked whole
// before it gets its name: its structure, bbolt's consistency check, the
// records the store decodes, and that it opens as a store this binary
// serves (older schemas are migrated now). The switch is one link: path
// appears with the checked copy or not at all. On any failure nothing is
// left at path or beside it. A copy a stopped restore left is replaced.
func Restore(path string, r io.Reader) error {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bolt: restore to %s: %w", path, ErrExists)
	}
	tmp := RestoringPath(path)
	if err := removeCopy(path); err != nil {
		return fmt.Errorf("bolt: restore: %w", err)
	}
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
	if rerr := removeCopy(path); err == nil {
		err = rerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("bolt: restore: %w", err)
	}
	return nil
}

// verify checks the copy whole (checkCopy), then opens it once: its
// schema is one this binary serves (older ones are migrated now).
func verify(path string) error {
	if err := checkCopy(path); err != nil {
		return err
	}
	s, err := Open(path, Options{})
	if err == nil {
		err = s.Close()
	}
	_ = os.RemoveAll(newJournal(path).dir) // the check's own, empty ledger log
	return err
}

// removeCopy removes what a restore to path leaves beside it, the copy
// last: while it is there, the restore is unfinished.
func removeCopy(path string) error {
	left := RestoreLeftovers(path)
	if err := os.RemoveAll(left[1]); err != nil {
		return err
	}
	if err := os.Remove(left[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// restoreLeftover looks beside path for the copy of a restore. None: "".
// A copy that already is path (the restore was stopped between its link
// and the removal of the copy's name) is removed. With no store at path,
// ErrInterruptedRestore. Otherwise the store stays in use and the copy
// is returned for the caller to report.
func restoreLeftover(path string) (string, error) {
	tmp := RestoringPath(path)
	li, err := os.Lstat(tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	pi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: it left %s, and there is no store", ErrInterruptedRestore, tmp)
	case err != nil:
		return "", err
	case os.SameFile(li, pi):
		return "", removeCopy(path)
	}
	return tmp, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
