package bolt

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable without its times: on a file whose
// size does not change, no file-system journal commit either.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
