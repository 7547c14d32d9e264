package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_VerbsSayWhatHappened: rejecting a request says the request
// was rejected and its task will not run, approving says it was approved,
// and a rebaseline says the task was rebaselined, not that it "is now
// active".
func TestCLI_VerbsSayWhatHappened(t *testing.T) {
	fx := newFixture(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	rejectID := seedRequest(t, dataDir, fx.feed.url()+"?bob")
	approveID := seedRequest(t, dataDir, fx.feed.url()+"?carol")
	startServeAt(t, writeConfig(t, fx.config(t, "")), dataDir, hookSecretEnv+"="+hookSecret)
	waitBaseline(t, dataDir, "news")

	taskOf := func(req string) string { return "t-" + strings.TrimPrefix(req, "r-") }
	checks := []struct {
		args []string
		want string
	}{
		{[]string{"requests", "reject", rejectID, "not", "a", "course", "site"}, "Rejected request " + rejectID + "; task " + taskOf(rejectID) + " will not run."},
		{[]string{"requests", "approve", approveID}, "Approved request " + approveID + "; task " + taskOf(approveID) + " is active."},
		{[]string{"tasks", "rebaseline", "news"}, "news rebaselined: what its source lists now is its new baseline, pushed to no one; it stays active"},
	}
	for _, c := range checks {
		out := cli(t, dataDir, c.args...)
		if strings.TrimSpace(out) != c.want {
			t.Errorf("herald %s:\n got %q\nwant %q", strings.Join(c.args, " "), strings.TrimSpace(out), c.want)
		}
	}
}
