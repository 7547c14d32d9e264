package configs

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestLoad_CanvasTaskTakesItsTokenFromAVariable(t *testing.T) {
	cfg, err := LoadEnv(filepath.Join("testdata", "canvas-task.yaml"), env("CANVAS_TOKEN", "7~canvas-secret"))
	assertNoSecret(t, cfg, err, "7~canvas-secret")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Tasks[0].Source
	if s.Kind != "canvas" || s.Token != "7~canvas-secret" || !slices.Equal(s.Courses, []string{"12345", "678"}) ||
		!slices.Equal(s.Watch, []string{"assignments", "announcements"}) {
		t.Fatalf("source = kind %q courses %v watch %v (token set: %v)", s.Kind, s.Courses, s.Watch, s.Token != "")
	}
}

func TestLoad_CourseFileDownloadsAreCheckedAtTheirLines(t *testing.T) {
	src := `policy:
  download_roots: ["relative/root"]
  download_hosts: ["files example.net"]
tasks:
  - id: cs101
    source:
      kind: canvas
      url: "https://school.instructure.com"
      token: t
      download: {dir: "../../etc", types: [pdf, ""], max_per_run: 5000}
    schedule: every 1h
    notify: ["inbox:console:admin"]
  - id: news
    source:
      kind: rss
      url: "https://news.example.edu/feed.xml"
      download:
        dir: news
    schedule: every 1h
    notify: ["inbox:console:admin"]
  - id: ok
    source:
      kind: moodle
      url: "https://moodle.example.edu"
      token: t
      watch: [assignments, files]
      download: {dir: "moodle", types: ["video/*"], max_per_run: 20}
    schedule: every 1h
    notify: ["inbox:console:admin"]
`
	_, err := loadString(t, src, noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{2, "policy.download_roots[0]: want an absolute directory"},
		{3, "policy.download_hosts[0]: malformed host"},
		{10, `tasks[0].source.download.dir: download dir "../../etc" leaves the task's directory`},
		{10, "tasks[0].source.download.max_per_run: want a number from 1 to 100, the per-run bound"},
		{10, "tasks[0].source.download.types[1]: an empty type"},
		{17, "tasks[1].source.download: downloads are for course sites"},
	})
}
