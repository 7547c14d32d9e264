package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestCLI_TasksListShowsEachTasksSource: `tasks list` has a SOURCE column
// with the kind and host of what each task reads, and --json carries it
// as "source" beside the fields it had.
func TestCLI_TasksListShowsEachTasksSource(t *testing.T) {
	fx := newFixture(t)
	_, dataDir := fx.start(t)
	waitBaseline(t, dataDir, "news")
	u, err := url.Parse(fx.feed.url())
	if err != nil {
		t.Fatal(err)
	}
	news := listTasks(t, dataDir)["news"]
	if news.Source.Kind != "rss" || news.Source.Host != u.Host {
		t.Fatalf("tasks list --json: news source = %+v, want rss %s", news.Source, u.Host)
	}
	rows := keysOf(t, cli(t, dataDir, "tasks", "list", "--json"))
	requireKeys(t, "tasks list --json", rows[0], "id", "name", "state", "owner", "schedule", "next_run", "last_outcome", "source")

	out := cli(t, dataDir, "tasks", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "OWNER") || !strings.Contains(lines[0], "SOURCE") || !strings.Contains(lines[0], "SCHEDULE") {
		t.Fatalf("tasks list header: %q", lines[0])
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "news ") && strings.Contains(l, " rss "+u.Host+" ") {
			return
		}
	}
	t.Fatalf("tasks list does not show news's source rss %s:\n%s", u.Host, out)
}
