package tasks

import (
	"testing"

	"github.com/herald-bridge/herald/tasks/watch"
)

// Notices name a task by its name, else by the source's own title, else
// by the source's host: never by its id.
func TestDisplayName_NeverTheTaskID(t *testing.T) {
	src := watch.Spec{URL: "https://news.example.edu/feed.xml"}
	for _, tc := range []struct {
		name string
		task Task
		want string
	}{
		{"named", Task{ID: "t-2ff65d", Name: "Campus news", SourceTitle: "News", Source: src}, "Campus news"},
		{"unnamed, the feed's title", Task{ID: "t-2ff65d", SourceTitle: "Campus & News", Source: src}, "Campus & News"},
		{"unnamed, untitled: the host", Task{ID: "t-2ff65d", Source: src}, "news.example.edu"},
		{"config name defaulted to its id: the feed's title", Task{ID: "campus-news", Name: "campus-news", SourceTitle: "Campus News", Source: src}, "Campus News"},
		{"config name defaulted to its id, untitled", Task{ID: "campus-news", Name: "campus-news", Source: src}, "campus-news"},
	} {
		if got := tc.task.DisplayName(); got != tc.want {
			t.Errorf("%s: DisplayName = %q, want %q", tc.name, got, tc.want)
		}
	}
}
