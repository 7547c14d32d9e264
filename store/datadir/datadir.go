// Package datadir guards herald's data directory: an exclusive lock so one
// process serves it at a time, and the private admin access record
// (admin.json) through which the CLI finds the running service.
package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/herald-bridge/herald/store/flock"
)

// File names inside the data dir.
const (
	LockFile     = ".lock"
	AdminFile    = "admin.json"
	InstanceFile = "instance"
)

var (
	// ErrLocked means another herald process serves the data dir.
	ErrLocked = errors.New("another herald serves this data dir")
	// ErrNotRunning means no admin access record exists: no service is
	// running on the data dir (or it has not published its address yet).
	ErrNotRunning = errors.New("no running herald found for this data dir")
)

// DirLock is a held exclusive lock on a data dir. The kernel releases it when
// the process exits, however it exits, so a crashed process never blocks
// the next one.
type DirLock struct {
	f *os.File
}

// Lock creates dir (0700) if needed and takes an exclusive, non-blocking
// flock on dir/.lock. It fails with ErrLocked while another open lock
// exists, in this process or another; the error names the holder's pid
// when admin.json says it.
func Lock(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("datadir: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("datadir: open lock file: %w", err)
	}
	if err = flock.Try(f, true); err != nil {
		_ = f.Close()
		if errors.Is(err, flock.ErrHeld) {
			if rec, rerr := ReadAdmin(dir); rerr == nil && rec.PID > 0 {
				return nil, fmt.Errorf("%w (pid %d): %s", ErrLocked, rec.PID, dir)
			}
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("datadir: lock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock. The lock file stays: removing it would let a
// racing opener lock a different inode.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := flock.Unlock(l.f)
	cerr := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("datadir: unlock: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("datadir: unlock: %w", cerr)
	}
	return nil
}

// AdminRecord is the private access record of the running service.
type AdminRecord struct {
	Addr   string `json:"addr"`
	Token  string `json:"token"`
	PID    int    `json:"pid"`
	Scheme string `json:"scheme"`
	// Instance is the data dir's lasting identity (see Instance): the
	// same across restarts of the service that keeps its state there, new
	// when the data dir is made afresh.
	Instance string `json:"instance,omitempty"`
}

// WriteAdmin writes dir/admin.json with mode 0600, atomically: a reader
// sees the old record or the new one, never a torn file.
func WriteAdmin(dir string, rec AdminRecord) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("datadir: encode admin record: %w", err)
	}
	if err := writeAtomic(dir, AdminFile, append(data, '\n')); err != nil {
		return fmt.Errorf("datadir: write admin record: %w", err)
	}
	return nil
}

// writeAtomic writes dir/name with mode 0600 through a synced temp file
// and a rename, so a reader sees the old content or the new, never a torn
// file.
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return err
	}
	if err := os.Rename(tmpName, filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmpName)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Instance returns the data dir's identity, creating it on first use: a
// random id kept in dir/instance. A restarted service on the same data dir
// has the same identity; a data dir made afresh at the same path has
// another, so a client that held on to the old service can tell them apart.
// The caller holds the data dir's lock.
func Instance(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, InstanceFile))
	if err == nil {
		if id := strings.TrimSpace(string(raw)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("datadir: read instance id: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if err := writeAtomic(dir, InstanceFile, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("datadir: write instance id: %w", err)
	}
	return id, nil
}

// ReadAdmin reads dir/admin.json; ErrNotRunning when it does not exist.
// Errors never include the token.
func ReadAdmin(dir string) (AdminRecord, error) {
	data, err := os.ReadFile(filepath.Join(dir, AdminFile))
	if errors.Is(err, fs.ErrNotExist) {
		return AdminRecord{}, fmt.Errorf("%w: %s", ErrNotRunning, dir)
	}
	if err != nil {
		return AdminRecord{}, fmt.Errorf("datadir: read admin record: %w", err)
	}
	var rec AdminRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return AdminRecord{}, errors.New("datadir: admin record is not valid JSON")
	}
	return rec, nil
}

// RemoveAdmin deletes dir/admin.json; an absent record is not an error.
func RemoveAdmin(dir string) error {
	err := os.Remove(filepath.Join(dir, AdminFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("datadir: remove admin record: %w", err)
	}
	return nil
}

// NewToken returns a fresh 256-bit random token, hex encoded.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}
