package main

import (
	"strings"
	"testing"
)

// TestCLI_HelpCommandPrintsThatCommandsUsage: `herald help tasks` prints
// what `herald tasks --help` prints; an unknown name is a usage error
// that names the closest command when one is close.
func TestCLI_HelpCommandPrintsThatCommandsUsage(t *testing.T) {
	for _, name := range []string{"tasks", "export", "mcp"} {
		viaHelp, errOut, code := run(t, "help", name)
		if code != exitOK || errOut != "" {
			t.Fatalf("herald help %s: exit %d, stderr %q", name, code, errOut)
		}
		viaFlag, _, code := run(t, name, "--help")
		if code != exitOK || viaFlag != viaHelp {
			t.Fatalf("herald %s --help (exit %d) differs from herald help %s:\n%s\n---\n%s", name, code, name, viaFlag, viaHelp)
		}
		if !strings.Contains(viaHelp, "Usage:\n  herald "+name+" ") || !strings.Contains(viaHelp, "Flags:") {
			t.Fatalf("herald help %s is not its usage:\n%s", name, viaHelp)
		}
	}
	out, errOut, code := run(t, "help", "taks")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `unknown command "taks" (did you mean tasks?)`) {
		t.Fatalf("herald help taks: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = run(t, "help", "zzz")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "zzz"`) || strings.Contains(errOut, "did you mean") {
		t.Fatalf("herald help zzz: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "exprot")
	if code != exitUsage || !strings.Contains(errOut, "(did you mean export?)") {
		t.Fatalf("herald exprot: exit %d, stderr %q", code, errOut)
	}
}
