package textcut

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never half of it
		{"aé", 3, "aé"},
		{"日本語", 7, "日本"}, // three bytes each
		{"日本語", 2, ""},
	} {
		if got := Bytes(c.s, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
