package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks"
)

// A failed check's reason, in the source's words, is in the console's
// task list, its failing list and the task's detail, not only its class;
// the detail says when the next check is and why (SPEC §18).
func TestConsole_FailureReasonInTheTaskListFailingListAndDetail(t *testing.T) {
	r := newRig(t, Options{})
	ctx := context.Background()
	tk, err := r.manager.Submit(ctx, tasks.Submission{Principal: "console:admin", URL: "https://news.example.edu/feed.xml?key=s3cret", Kind: "rss"})
	if err != nil {
		t.Fatal(err)
	}
	// As the runner records a failed check.
	if _, err := r.manager.Update(ctx, tk.ID, func(t *tasks.Task) error {
		t.LastOutcome, t.LastError, t.Failures = tasks.OutcomeFailed, "transient", 1
		t.LastReason = "transient: GET https://news.example.edu: lookup news.example.edu: no such host"
		t.NextRun = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		t.Postponed, t.PostponedTo, t.Failures = tasks.NextByBackoff, t.NextRun, 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.signIn(t, "console:admin")
	for _, path := range []string{"/console/api/tasks", "/console/api/attention", "/console/api/task?id=" + tk.ID} {
		resp, body := r.do(t, http.MethodGet, path, "", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if !strings.Contains(body, `"last_error":"transient: GET https://news.example.edu: lookup news.example.edu: no such host"`) {
			t.Errorf("%s does not say why the check failed:\n%s", path, body)
		}
		if strings.Contains(path, "task?") && !strings.Contains(body, `"next_check":{"at":"2026-12-01T12:00:00Z","why":"backoff","failures":3}`) {
			t.Errorf("the task's detail does not say when and why it is checked next:\n%s", body)
		}
		if strings.Contains(body, "s3cret") {
			t.Errorf("%s shows the source's query (I10):\n%s", path, body)
		}
	}
}
