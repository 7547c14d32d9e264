package configs

import "testing"

// TestLoad_TelegramForumTopicAddresses: a forum topic's address is
// accepted wherever an address is (a recipient, a task's notify list),
// and a malformed one is reported at its line.
func TestLoad_TelegramForumTopicAddresses(t *testing.T) {
	good := "recipients:\n" +
		"  course-topic: {address: \"telegram:chat:-1001234:topic:42\"}\n" +
		"tasks:\n" +
		"  - id: news\n" +
		"    source: {kind: rss, url: \"https://news.example.edu/feed.xml\"}\n" +
		"    schedule: every 30m\n" +
		"    notify: [course-topic, \"telegram:chat:-1001234:topic:1\"]\n"
	cfg, err := loadString(t, good, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Recipients["course-topic"].Address; got != "telegram:chat:-1001234:topic:42" {
		t.Errorf("address = %q", got)
	}

	bad := "recipients:\n" +
		"  course-topic: {address: \"telegram:chat:-1001234:topic:0\"}\n" +
		"tasks:\n" +
		"  - id: news\n" +
		"    source: {kind: rss, url: \"https://news.example.edu/feed.xml\"}\n" +
		"    schedule: every 30m\n" +
		"    notify: [course-topic, \"telegram:chat:-1001234:topic:general\"]\n"
	_, err = loadString(t, bad, noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{2, "recipients.course-topic.address: telegram topic id must be a positive integer"},
		{7, "tasks[0].notify[1]: telegram topic id must be a positive integer"},
	})
}
