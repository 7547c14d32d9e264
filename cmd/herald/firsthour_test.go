package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeWalkThrough returns the command lines of the README's walk-through
// from a fresh clone to a first watched feed.
func readmeWalkThrough(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- first-hour walk-through")
	block, _, ok2 := strings.Cut(rest, "<!-- end of walk-through -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no marked walk-through")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

var (
	reTaskID = regexp.MustCompile(`\bt-[0-9a-f]{6}\b`)
	reEcho   = regexp.MustCompile(`^echo '([^']*)' \| bin/herald (.*)$`)
)

// TestFirstHour_READMEWalkThrough runs the README's walk-through as a
// person would, against the real binary: `make run` becomes the serve it
// runs (on a test port, with a local feed in place of the example URL),
// and every bin/herald line runs as written, from the directory whose
// ./data the service uses, without --data-dir.
func TestFirstHour_READMEWalkThrough(t *testing.T) {
	lines := readmeWalkThrough(t)
	if len(lines) != 5 {
		t.Errorf("the walk-through has %d commands, want 5:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	f := newFeed(t)
	repo := t.TempDir() // the fresh clone
	state := "XDG_STATE_HOME=" + t.TempDir()
	cfg := writeConfig(t, adjustExample(t, freeAddr(t), nil))
	var taskID, exampleURL string
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "git clone "):
			// The clone is this tree.
		case line == "make run":
			startServeAt(t, cfg, filepath.Join(repo, "data"), state)
		case reEcho.MatchString(line):
			m := reEcho.FindStringSubmatch(line)
			input := m[1]
			if u := regexp.MustCompile(`https://\S+`).FindString(input); u != "" {
				exampleURL = u
				input = strings.Replace(input, u, f.url(), 1)
			}
			out, errOut, code := runWithInput(t, repo, []string{state}, input+"\n", strings.Fields(m[2])...)
			if code != exitOK {
				t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
			}
			if taskID = reTaskID.FindString(out); taskID == "" || !strings.Contains(out, "Approved") {
				t.Fatalf("%s: no approved task in the answer:\n%s", line, out)
			}
		case strings.HasPrefix(line, "bin/herald "):
			if taskID != "" {
				line = reTaskID.ReplaceAllString(line, taskID)
			}
			args := strings.Fields(strings.TrimPrefix(line, "bin/herald "))
			if args[0] == "tasks" && args[1] == "run" {
				// A person reads the answer first; by then the baseline is set.
				waitBaseline(t, filepath.Join(repo, "data"), taskID)
				f.addItem("first-hour-1", "Episode after the baseline")
			}
			out, errOut, code := runIn(t, repo, []string{state}, args...)
			if code != exitOK {
				t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
			}
			switch args[0] + " " + args[1] {
			case "tasks run":
				if !strings.Contains(out, "1 new") {
					t.Errorf("%s found nothing new:\n%s", line, out)
				}
			case "inbox list":
				// The change notice is delivered just after the run answers;
				// a person who finds it missing lists again.
				full := func(out string) bool { return strings.Contains(out, "Watching") && strings.Count(out, "\n") >= 3 }
				eventually(t, line+" shows the baseline and the change notice", func() bool {
					if !full(out) {
						out, _, _ = runIn(t, repo, []string{state}, args...)
					}
					return full(out)
				})
			}
		default:
			t.Fatalf("the walk-through has a command this test does not know: %s", line)
		}
	}
	if exampleURL == "" || taskID == "" {
		t.Fatalf("the walk-through watched nothing")
	}

	// The rest of a first hour in the console: help, reading the change
	// notice in full, Chinese and back, a weekly schedule.
	out, errOut, code := runWithInput(t, repo, []string{state},
		"/help\n/inbox\n/read 2\n/lang zh\n/tasks\n/lang auto\n/watch "+f.srv.URL+"/other.xml 每周一 08:00\n/tasks\n", "chat", "--as", "admin")
	if code != exitOK {
		t.Fatalf("chat: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"cron 0 9 * * 1-5", "Unread (", "Episode after the baseline", "https://theomnishow.omnigroup.com/first-hour-1",
		"本聊天之后的回复和通知都使用中文", "全部任务", "each message in its own language", "weekly mon 08:00"} {
		if !strings.Contains(out, want) {
			t.Errorf("the first hour in chat lacks %q:\n%s", want, out)
		}
	}
	if out, _, code := runIn(t, repo, []string{state}, "version", "--json"); code != exitOK || !strings.Contains(out, `"version"`) {
		t.Errorf("version --json: exit %d %q", code, out)
	}
}

// TestFirstHour_READMEShowsAnotherPortAndDataDir: the README tells how to
// run on another port and data dir, and the Makefile takes what it says.
func TestFirstHour_READMEShowsAnotherPortAndDataDir(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^make run CONFIG=(\S+) DATA_DIR=(\S+)$`).FindStringSubmatch(string(readme))
	if line == nil || !strings.Contains(string(readme), "server.listen") {
		t.Fatal("the README does not show `make run CONFIG=… DATA_DIR=…` with where the port is set")
	}
	for _, want := range []string{`(?m)^CONFIG\s*\?=`, `(?m)^DATA_DIR\s*\?=`, `serve --config \$\(CONFIG\) --data-dir \$\(DATA_DIR\)`} {
		if !regexp.MustCompile(want).Match(mk) {
			t.Errorf("the Makefile lacks %s, which the README relies on", want)
		}
	}
}
