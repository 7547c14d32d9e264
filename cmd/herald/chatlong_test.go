package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestChat_PipedLongLineIsAnsweredAndTheSessionGoesOn: a piped session
// with one very long line gets an answer for it, as a typed line would,
// and the lines after it are answered too.
func TestChat_PipedLongLineIsAnsweredAndTheSessionGoesOn(t *testing.T) {
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	for _, n := range []int{100 << 10, 2 << 20} {
		long := "/watch https://example.org/" + strings.Repeat("a", n)
		out, errOut, code := chatCLI(t, dataDir, "alice", "/help\n"+long+"\n/help\n")
		if code != 0 {
			t.Fatalf("line of %d bytes: exit %d\nstdout: %s\nstderr: %s", n, code, out, errOut)
		}
		if !strings.Contains(out, "That line has "+strconv.Itoa(len(long))+" bytes and was not sent: a message has at most 4096 bytes.") {
			t.Fatalf("line of %d bytes: no answer saying why it was not sent:\n%.2000s", n, out)
		}
		if c := strings.Count(out, "Schedules may be typed in Chinese too"); c != 2 {
			t.Fatalf("line of %d bytes: %d of the 2 /help lines answered:\n%.2000s", n, c, out)
		}
	}
}
