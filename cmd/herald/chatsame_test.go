package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// namedTaskConfig is the reference config with one declared task named name.
func namedTaskConfig(t *testing.T, f *feed, name string) string {
	t.Helper()
	return adjustExample(t, freeAddr(t), map[string]string{
		"tasks: []": "tasks:\n  - id: news\n    name: " + name + "\n    source: {kind: rss, url: \"" + f.url() + "\"}\n    schedule: every 30m\n    notify: [admin-inbox]\n",
	})
}

// TestChat_ReconnectsOnlyToTheSameService: a session found through the
// per-user last-data-dir record stays with its service. When that service
// stops while another herald of the same user runs (and is now the one the
// record names), the session says at once that its service does not
// answer, does not switch, and carries on when its own service is back.
func TestChat_ReconnectsOnlyToTheSameService(t *testing.T) {
	state := "XDG_STATE_HOME=" + t.TempDir()
	f := newFeed(t)
	pA, dirA := startServe(t, namedTaskConfig(t, f, "Alpha news"), state)
	c := startChat(t, []string{state}, "--as", "admin")
	c.say("/tasks", "Alpha news")

	_, _ = startServe(t, namedTaskConfig(t, f, "Beta news"), state) // the record now names this one
	if code := pA.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve A exited %d", code)
	}
	before := strings.Count(c.out.String(), "Alpha news")
	if _, err := c.in.Write([]byte("/tasks\n")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session says its service is not answering", func() bool {
		return strings.Contains(c.errOut.String(), "herald is not answering (data dir "+dirA)
	})
	if strings.Contains(c.errOut.String(), "reconnected") || strings.Contains(c.out.String(), "Beta news") {
		t.Fatalf("the session switched to the other service:\n%s\n%s", c.out.String(), c.errOut.String())
	}
	startServeAt(t, pA.cfgPath, dirA, state)
	eventually(t, "the /tasks is answered by the restarted service", func() bool {
		return strings.Count(c.out.String(), "Alpha news") > before
	})
	if code := c.end(); code != exitOK {
		t.Fatalf("chat exit %d\nstderr:\n%s", code, c.errOut.String())
	}
	if strings.Contains(c.out.String(), "Beta news") {
		t.Errorf("the session showed the other service's tasks:\n%s", c.out.String())
	}
}

// TestChat_RefusesAFreshServiceInTheSameDataDir: when the data dir is made
// afresh and another herald starts in it, the session says it cannot go on
// with it and ends, instead of showing that service's tasks as its own.
func TestChat_RefusesAFreshServiceInTheSameDataDir(t *testing.T) {
	f := newFeed(t)
	pA, dirA := startServe(t, namedTaskConfig(t, f, "Alpha news"))
	c := startChat(t, nil, "--as", "admin", "--data-dir", dirA)
	c.say("/tasks", "Alpha news")
	if code := pA.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve A exited %d", code)
	}
	if err := os.RemoveAll(dirA); err != nil {
		t.Fatal(err)
	}
	startServeAt(t, writeConfig(t, namedTaskConfig(t, f, "Beta news")), dirA)
	if _, err := c.in.Write([]byte("/tasks\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(startBound):
		t.Fatalf("the session did not end:\n%s\n%s", c.out.String(), c.errOut.String())
	}
	if c.code == exitOK {
		t.Fatalf("the session carried on with another service:\n%s\n%s", c.out.String(), c.errOut.String())
	}
	if want := "another herald now serves the data dir " + filepath.Clean(dirA); !strings.Contains(c.errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, c.errOut.String())
	}
	if strings.Contains(c.out.String(), "Beta news") {
		t.Errorf("the session showed the other service's tasks:\n%s", c.out.String())
	}
}
