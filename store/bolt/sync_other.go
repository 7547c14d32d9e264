//go:build !linux

package bolt

import "os"

// datasync flushes f's data to disk.
func datasync(f *os.File) error { return f.Sync() }
