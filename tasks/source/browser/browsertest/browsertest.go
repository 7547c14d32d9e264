// Package browsertest gives tests a browser: skipped on a machine
// without Chromium, failed in CI without one.
package browsertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-bridge/herald/tasks/source/browser"
)

// NeedBrowser skips tb on a machine without Chromium, except in CI
// (CI set), where a missing browser fails it.
func NeedBrowser(tb testing.TB) {
	tb.Helper()
	if _, err := browser.Find(""); err != nil {
		if os.Getenv("CI") == "" {
			tb.Skipf("%v; the browser tests run in CI", err)
		}
		tb.Fatal(err)
	}
}

// Browser is a page renderer on the installed Chromium for tb, with its
// profiles in a temporary directory unless o names one; tb fails if a
// browser process is left running when it ends.
func Browser(tb testing.TB, o browser.Options) *browser.Pool {
	tb.Helper()
	NeedBrowser(tb)
	if o.Dir == "" {
		o.Dir = filepath.Join(tb.TempDir(), "browser")
	}
	p, err := browser.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if left := browser.Leftovers(o.Dir); len(left) != 0 {
			tb.Errorf("%d browser processes left running", len(left))
		}
	})
	return p
}
