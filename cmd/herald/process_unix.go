//go:build !windows

package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// alive reports whether pid may be a running process (unknown counts as
// alive: the connection attempt decides).
func alive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// keepOwner gives f the owner and group of the file it replaces.
func keepOwner(f *os.File, old fs.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}
