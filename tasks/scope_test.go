package tasks

import (
	"errors"
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI8_ScopeComparesPathSegments checks that a task stays inside its
// approved path only segment by segment, as redirects are judged: a
// sibling that shares the prefix as a string, or a path that climbs out
// through encoded dot segments, needs a new approval.
func TestI8_ScopeComparesPathSegments(t *testing.T) {
	cases := []struct {
		prefix, url string
		ok          bool
	}{
		{"/feeds", "https://news.example.edu/feeds/rss.xml", true},
		{"/feeds", "https://news.example.edu/feeds", true},
		{"/feeds", "https://news.example.edu/feeds/a/b.xml", true},
		{"/feeds", "https://news.example.edu/feeds-private/rss.xml", false},
		{"/feeds", "https://news.example.edu/feedsx", false},
		{"/feeds", "https://news.example.edu/feeds/%2e%2e/admin/rss.xml", false},
		{"/feeds", "https://news.example.edu/feeds/../admin/rss.xml", false},
		{"/feeds", "https://news.example.edu/feeds/%2E%2E/%2e%2e/admin", false},
		{"/feeds", "https://news.example.edu/feeds%2f..%2fadmin", false},
		{"", "https://news.example.edu/anything", true},
		{"/", "https://news.example.edu/anything", true},
	}
	for _, c := range cases {
		tk := &Task{
			ID: "t1", Owner: "console:admin", Source: watch.Spec{URL: c.url},
			Grant: &Grant{Owner: "console:admin", Host: "news.example.edu", PathPrefix: c.prefix, Basis: "config"},
		}
		err := Policy{}.checkScope(tk)
		if c.ok && err != nil {
			t.Errorf("prefix %q, %s: %v, want inside", c.prefix, c.url, err)
		}
		if !c.ok && !errors.Is(err, ErrScope) {
			t.Errorf("prefix %q, %s: %v, want a scope error", c.prefix, c.url, err)
		}
	}
}
