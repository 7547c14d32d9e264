package egress

import (
	"net/url"
	"testing"
)

// TestI8_PathWithinIsSegmentwise: an approved path prefix covers the
// paths under it segment by segment, whatever dot segments, encodings or
// separators a redirect target uses to climb out of it.
func TestI8_PathWithinIsSegmentwise(t *testing.T) {
	for _, tt := range []struct {
		prefix, target string
		want           bool
	}{
		{"/feeds", "https://h/feeds", true},
		{"/feeds", "https://h/feeds/", true},
		{"/feeds", "https://h/feeds/a/b.xml", true},
		{"/feeds/", "https://h/feeds/a", true},
		{"/feeds", "https://h/feeds/./a", true},
		{"/feeds", "https://h/feeds/a/%2e%2e/b", true},
		{"/feeds", "https://h//feeds//a", true},
		{"", "https://h/anything", true},
		{"/", "https://h/anything", true},

		{"/feeds", "https://h/feeds-private/x", false},
		{"/feeds", "https://h/feedsx", false},
		{"/feeds", "https://h/", false},
		{"/feeds", "https://h/other/feeds", false},
		{"/feeds", "https://h/feeds/%2e%2e/admin/x", false},
		{"/feeds", "https://h/feeds/%2E%2E/admin", false},
		{"/feeds", "https://h/feeds/.%2e/admin", false},
		{"/feeds", "https://h/feeds/%2e%2e", false},
		{"/feeds", "https://h/feeds/a/%2e%2e/%2e%2e/admin", false},
		{"/feeds", "https://h/feeds%2f..%2fadmin", false},
		{"/feeds", "https://h/feeds/x%2f..%2f..%2fadmin", false},
		{"/feeds", `https://h/feeds/..\admin`, false},
		{"/feeds", "https://h/feeds/..;/admin", false},
		{"/feeds", "https://h/%2e%2e/feeds", false},
		{"/feeds/a", "https://h/feeds/a%2fb/..", false},
		{"/a/b", "https://h/a/b/../c", false},
	} {
		u, err := url.Parse(tt.target)
		if err != nil {
			t.Fatalf("%s: %v", tt.target, err)
		}
		if got := PathWithin(tt.prefix, u); got != tt.want {
			t.Errorf("PathWithin(%q, %s) = %v, want %v", tt.prefix, tt.target, got, tt.want)
		}
	}
}
