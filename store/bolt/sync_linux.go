package bolt

import (
	"os"
	"syscall"
)

// datasync flushes f's data (and the size an append changed) to disk.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
