package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestTimes_ShownWithTheirZoneInTheTasksZone walks a console chat: a
// watch checked daily at 23:59 New York time lists its next run as 23:59
// EST, not as the service's UTC, and /task says the same.
func TestTimes_ShownWithTheirZoneInTheTasksZone(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch "+f.url()+" daily 23:59 America/New_York\n")
	tid := reTaskID.FindString(out)
	if code != 0 || tid == "" {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	waitBaseline(t, dataDir, tid) // the first check runs at once; then 23:59
	out, _, _ = chatCLI(t, dataDir, "admin", "/tasks\n/task "+tid+"\n")
	if n := strings.Count(out, "23:59 EST"); n < 2 {
		t.Errorf("the next run is not shown as 23:59 EST in /tasks and /task:\n%s", out)
	}
	if regexp.MustCompile(`0[45]:59|UTC`).MatchString(out) {
		t.Errorf("a time is shown in UTC:\n%s", out)
	}
}
