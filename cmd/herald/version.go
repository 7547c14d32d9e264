package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionLine is what `herald --version` prints:
// herald v1.2.3 (commit abc1234, go1.26.1).
func versionLine() string {
	return fmt.Sprintf("herald %s (commit %s, %s)", version, buildCommit(), runtime.Version())
}

// buildCommit is the commit stamped with -X main.commit, else the one the
// Go toolchain recorded (a build from a checkout with VCS stamping on),
// else "unknown".
func buildCommit() string {
	if commit != "unknown" && commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
