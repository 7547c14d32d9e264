package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestMetrics_BuildInfoNamesTheRunningBuild: /metrics has
// herald_build_info 1 labelled with the version, commit and Go version
// that `herald version --json` reports for the same binary.
func TestMetrics_BuildInfoNamesTheRunningBuild(t *testing.T) {
	out, errOut, code := run(t, "version", "--json")
	if code != exitOK {
		t.Fatalf("herald version --json: exit %d, %s", code, errOut)
	}
	var v struct{ Version, Commit, Go string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "" || v.Commit == "" || v.Go == "" {
		t.Fatalf("herald version --json = %q (%v)", out, err)
	}
	p, _ := startServe(t, adjustExample(t, freeAddr(t), nil))
	want := fmt.Sprintf(`herald_build_info{commit=%q,goversion=%q,version=%q} 1`, v.Commit, v.Go, v.Version)
	if got := scrape(t, p); !strings.Contains(got, want+"\n") {
		t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(got, "herald_build_info"))
	}
}
