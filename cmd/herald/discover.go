package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/herald-bridge/herald/store/datadir"
)

// defaultDataDir is where `herald serve` keeps its state when neither
// --data-dir nor HERALD_DATA_DIR names a directory.
const defaultDataDir = "./data"

// lastServiceFile, in the per-user state dir, names the data dir of the
// last service this user started, so the CLI finds it from any directory.
const lastServiceFile = "last-data-dir"

// stateDir is the per-user state dir: $XDG_STATE_HOME/herald, else
// ~/.local/state/herald; "" when neither can be known.
func stateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "herald")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".local", "state", "herald")
	}
	return ""
}

// rememberDataDir records dir as the last started service's data dir. It
// holds a path only, never the access token (that stays in admin.json).
func rememberDataDir(dir string) {
	state := stateDir()
	abs, err := filepath.Abs(dir)
	if state == "" || err != nil {
		return
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return
	}
	tmp := filepath.Join(state, lastServiceFile+".tmp")
	if err := os.WriteFile(tmp, []byte(abs+"\n"), 0o600); err != nil {
		return
	}
	_ = os.Rename(tmp, filepath.Join(state, lastServiceFile))
}

// forgetDataDir removes the record when it still names dir.
func forgetDataDir(dir string) {
	state := stateDir()
	abs, err := filepath.Abs(dir)
	if state == "" || err != nil {
		return
	}
	path := filepath.Join(state, lastServiceFile)
	if raw, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(raw)) == abs {
		_ = os.Remove(path)
	}
}

// candidateDataDirs lists where the CLI looks for the running service when
// no data dir was named: ./data, then the last started service's.
func candidateDataDirs() []string {
	dirs := []string{defaultDataDir}
	if state := stateDir(); state != "" {
		if raw, err := os.ReadFile(filepath.Join(state, lastServiceFile)); err == nil {
			if d := strings.TrimSpace(string(raw)); filepath.IsAbs(d) && !sameDir(d, defaultDataDir) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

func sameDir(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// findService returns the admin record to use: the named data dir's, or
// the first candidate whose service is alive. It records where it looked.
func (e *env) findService() (datadir.AdminRecord, error) {
	if !e.dataDirFound {
		e.looked = []string{e.dataDir}
		return datadir.ReadAdmin(e.dataDir)
	}
	e.looked = nil
	for _, d := range candidateDataDirs() {
		e.looked = append(e.looked, d)
		rec, err := datadir.ReadAdmin(d)
		if err != nil || !alive(rec.PID) {
			continue
		}
		e.dataDir = d
		return rec, nil
	}
	return datadir.AdminRecord{}, datadir.ErrNotRunning
}
