// Package flock takes advisory locks on open files, without waiting:
// flock(2) where there is one, LockFileEx on Windows. The data dir's lock
// and the store file's check before it is opened use it.
package flock

import "errors"

// ErrHeld: another holder has a lock that conflicts with the one asked for.
var ErrHeld = errors.New("lock held elsewhere")
