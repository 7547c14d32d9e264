package redis

import (
	"strconv"
	"testing"
)

func TestInboxSeq(t *testing.T) {
	tests := []struct {
		id   string
		want int64
		ok   bool
	}{
		{"0000000000000001", 1, true},
		{"0000000000001000", 1000, true},
		{"0000000000000000", 0, false},
		{"1", 0, false},
		{"", 0, false},
		{"-000000000000001", 0, false},
		{"+000000000000001", 0, false},
		{"00000000000000x1", 0, false},
	}
	for _, tt := range tests {
		got, ok := inboxSeq(tt.id)
		if got != tt.want && ok || ok != tt.ok {
			t.Errorf("inboxSeq(%q) = %d, %t; want %d, %t", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzInboxSeq checks the paging cursor parser: it accepts exactly the ids
// the store assigns, and an accepted cursor prints back to itself.
func FuzzInboxSeq(f *testing.F) {
	f.Add("0000000000000042")
	f.Add("42")
	f.Add("+000000000000042")
	f.Fuzz(func(t *testing.T, id string) {
		n, ok := inboxSeq(id)
		if !ok {
			return
		}
		if n <= 0 {
			t.Fatalf("accepted %q as %d", id, n)
		}
		if back := inboxID(n); back != id {
			t.Fatalf("cursor %q parses to %d, which prints as %q", id, n, back)
		}
	})
}

func inboxID(n int64) string {
	s := strconv.FormatInt(n, 10)
	for len(s) < inboxIDWidth {
		s = "0" + s
	}
	return s
}
