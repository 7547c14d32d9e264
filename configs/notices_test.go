package configs

import "testing"

// check-config parses every notice template and names the file line a
// bad one breaks on, and knows the formats (SPEC §20).
func TestCheckConfig_NoticeTemplatesAndFormats(t *testing.T) {
	src := `recipients:
  team:
    address: "inbox:console:admin"
    format: compact
    template: |
      {{.task}}
      {{range .items}}- {{.title}}
      {{end}
  fine:
    address: "inbox:console:bob"
    format: link
    template: "{{.task | upper}}: {{len .items}} {{.occurred_at | date \"15:04\"}}"
tasks:
  - id: news
    source: {kind: rss, url: "https://news.example.edu/feed.xml"}
    schedule: every 1h
    notify: [team]
    notify_removed: true
    template: "{{.task | nosuch}}"
`
	_, err := loadString(t, src, noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{4, `recipients.team.format: unknown format "compact" (want full, title, link)`},
		{8, "recipients.team.template: bad template: bad character"},
		{19, `tasks[0].template: bad template: function "nosuch" not defined`},
	})
}
