package main

import (
	"strings"
	"testing"
)

// TestCLI_InboxShortNumbers: `herald inbox list` shows each item by the
// same short number chat shows, and `herald inbox read` takes it.
func TestCLI_InboxShortNumbers(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	var out string
	eventually(t, "the baseline notice in the inbox", func() bool {
		out = cli(t, dataDir, "inbox", "list", "console:admin")
		return strings.Contains(out, "Watching")
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "*  1  ") || strings.Contains(out, "000000") {
		t.Fatalf("inbox list does not show the short number:\n%s", out)
	}
	if got := cli(t, dataDir, "inbox", "read", "console:admin", "1"); !strings.Contains(got, "1 item(s) marked read") {
		t.Errorf("inbox read 1: %s", got)
	}
}
