package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/source/browser/browsertest"
)

// A herald killed while a page renders leaves Chromium's processes
// behind (its child processes may outlive it); the next start on the data
// dir finds them by their profile directory and kills them.
func TestRender_KilledHeraldLeavesNoChromiumAfterRestart(t *testing.T) {
	browsertest.NeedBrowser(t)
	slow := make(chan struct{}, 1)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><ul id="l"></ul><script>fetch("/slow")</script></body></html>`)
			return
		}
		select {
		case slow <- struct{}{}:
		default:
		}
		<-r.Context().Done() // the page never settles
	}))
	defer page.Close()
	fx := newFixture(t)
	cfg := fx.config(t, "  - id: rendered\n    source: {kind: html, url: \""+page.URL+"/\", selector: li, render: browser}\n"+
		"    schedule: every 30m\n    notify: [admin-inbox]\n")
	cfg += "\nbrowser:\n  timeout: 2m\n"
	p, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret)
	profiles := filepath.Join(dataDir, "browser")

	// Ask for a check until the page is being rendered: a herald just
	// started may still be taking over scheduling.
	rendering := false
	for deadline := time.Now().Add(time.Minute); !rendering && time.Now().Before(deadline); {
		run := exec.Command(heraldBin, "tasks", "run", "rendered", "--no-wait", "--data-dir", dataDir)
		run.Env = childEnv()
		_ = run.Run()
		select {
		case <-slow:
			rendering = true
		case <-time.After(2 * time.Second):
		}
	}
	if !rendering {
		t.Fatalf("the page was not rendered\nlog:\n%s", p.log.String())
	}
	old := browser.Leftovers(profiles)
	oldDirs, _ := filepath.Glob(filepath.Join(profiles, "page-*"))
	if len(old) == 0 || len(oldDirs) == 0 {
		t.Fatalf("no browser process (%v) or profile (%v) under the data dir while the page renders", old, oldDirs)
	}
	p.signal(syscall.SIGKILL)

	// The restarted herald checks the overdue page again with a browser
	// of its own; none of the killed one's may still run.
	p2 := startServeAt(t, p.cfgPath, dataDir, hookSecretEnv+"="+hookSecret)
	for _, pid := range browser.Leftovers(profiles) {
		if slices.Contains(old, pid) {
			t.Errorf("browser process %d of the killed herald still runs", pid)
		}
	}
	for _, d := range oldDirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("profile %s of the killed herald is still there", filepath.Base(d))
		}
	}
	if code := p2.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
