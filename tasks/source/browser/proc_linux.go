//go:build linux

package browser

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidsUnder lists the processes started with a profile directory at or
// under dir: Chromium passes --user-data-dir to every process it starts.
func pidsUnder(dir string) []int {
	dir = filepath.Clean(dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			v, ok := bytes.CutPrefix(arg, []byte("--user-data-dir="))
			if ok && (string(v) == dir || strings.HasPrefix(string(v), dir+"/")) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// killUnder kills the processes under dir, looking again until a few
// looks in a row find none (a child may fork as its parent dies).
func killUnder(dir string) int {
	n := 0
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pids := pidsUnder(dir)
		if len(pids) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// residentUnder sums the resident memory of the processes under dir, in
// bytes.
func residentUnder(dir string) int64 {
	var sum int64
	for _, pid := range pidsUnder(dir) {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				sum += kb << 10
				break
			}
		}
		f.Close()
	}
	return sum
}
