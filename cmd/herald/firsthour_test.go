package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
	reTaskID  = regexp.MustCompile(`\bt-[0-9a-f]{6}\b`)
	reFeedURL = regexp.MustCompile(`https://[^\s']+`)
)

// bash runs one shell line in dir, as a person's terminal would.
func bash(t *testing.T, dir string, env []string, line string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, childEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	outputsOf(t).add(stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

// TestFirstHour_READMEWalkThrough runs the README's walk-through lines
// themselves, with bash, from a directory where bin/herald is the binary
// under test. What it changes, and nothing more: `git clone` is skipped
// (the clone is this tree); `make run` becomes the serve it runs, with the
// reference config on a test port and private networks allowed; and the
// public feed's URL is replaced by a local copy of a feed, since tests do
// not reach the internet. The test logs each change. Every other line —
// the pipe into `bin/herald chat`, reading the printed task id back, the
// inbox — runs as written, without --data-dir.
func TestFirstHour_READMEWalkThrough(t *testing.T) {
	lines := readmeWalkThrough(t)
	if len(lines) != 5 {
		t.Errorf("the walk-through has %d commands, want 5:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	f := newFeed(t)
	repo := t.TempDir() // the fresh clone
	if err := os.MkdirAll(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(heraldBin, filepath.Join(repo, "bin", "herald")); err != nil {
		t.Fatal(err)
	}
	state := "XDG_STATE_HOME=" + t.TempDir()
	cfg := writeConfig(t, adjustExample(t, freeAddr(t), nil))
	var taskID, exampleURL string
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "git clone "):
			t.Logf("changed: %q is skipped, the clone is this tree", line)
			continue
		case line == "make run":
			t.Logf("changed: %q runs bin/herald serve on a test port with private networks allowed", line)
			startServeAt(t, cfg, filepath.Join(repo, "data"), state)
			continue
		}
		if u := reFeedURL.FindString(line); u != "" && exampleURL == "" {
			exampleURL = u
			t.Logf("changed: the feed %s is served locally at %s", u, f.url())
			line = strings.Replace(line, u, f.url(), 1)
		}
		if strings.Contains(line, "tasks run") {
			// A person reads the answer first; by then the baseline is set.
			waitBaseline(t, filepath.Join(repo, "data"), taskID)
			f.addItem("first-hour-1", "Episode after the baseline")
		}
		out, errOut, code := bash(t, repo, []string{state}, line)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
		}
		switch {
		case strings.Contains(line, "bin/herald chat"):
			if taskID = reTaskID.FindString(out); taskID == "" || !strings.Contains(out, "Approved") {
				t.Fatalf("%s: no approved task in the answer:\n%s", line, out)
			}
		case strings.Contains(line, "tasks run"):
			// A run asked for while the baseline is still being committed
			// joins it and answers "baseline"; a person runs it again.
			for i := 0; i < 20 && strings.Contains(out, taskID+": baseline"); i++ {
				out, _, _ = bash(t, repo, []string{state}, line)
			}
			if !strings.Contains(out, taskID+": ok") || !strings.Contains(out, "1 new") {
				t.Errorf("%s did not check the printed task and find the new item:\n%s", line, out)
			}
		case strings.Contains(line, "inbox list"):
			// The change notice is delivered just after the run answers;
			// a person who finds it missing lists again.
			full := func(out string) bool { return strings.Contains(out, "Watching") && strings.Count(out, "\n") >= 3 }
			eventually(t, line+" shows the baseline and the change notice", func() bool {
				if !full(out) {
					out, _, _ = bash(t, repo, []string{state}, line)
				}
				return full(out)
			})
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
