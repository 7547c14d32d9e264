package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVersionPrintsVersionCommitAndGo(t *testing.T) {
	out, _, code := run(t, "--version")
	if code != exitOK || !regexp.MustCompile(`^herald dev \(commit \S+, go1\.\d+`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if out2, _, _ := run(t, "version"); out2 != out {
		t.Errorf("version %q differs from --version %q", out2, out)
	}
	var v map[string]string
	out, _, _ = run(t, "version", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["version"] != "dev" || v["commit"] == "" || !strings.HasPrefix(v["go"], "go1.") {
		t.Errorf("version --json: %v %s", err, out)
	}

	// A release build stamps both.
	bin := filepath.Join(t.TempDir(), "herald")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3 -X main.commit=abc1234", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	got, err := exec.Command(bin, "--version").Output()
	want := fmt.Sprintf("herald v1.2.3 (commit abc1234, %s)\n", goVersionOf(t, bin))
	if err != nil || string(got) != want {
		t.Errorf("stamped --version %q, want %q (%v)", got, want, err)
	}
}

// goVersionOf is the Go version bin was built with.
func goVersionOf(t *testing.T, bin string) string {
	out, err := exec.Command("go", "version", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out)) // bin: go1.x.y
	return f[len(f)-1]
}
