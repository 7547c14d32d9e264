package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chatCLI runs `herald chat --as as` against dataDir with input on stdin
// (a script, not a terminal) and returns stdout, stderr and the exit code.
func chatCLI(t *testing.T, dataDir, as, input string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"chat", "--data-dir", dataDir}
	if as != "" {
		args = append(args, "--as", as)
	}
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	cmd.Env = childEnv()
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	if code == -1 {
		t.Fatalf("herald chat: could not run")
	}
	outputsOf(t).add(stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), code
}

var reRequest = regexp.MustCompile(`r-[0-9a-f]{6}`)

// TestChat_RequestApprovalDecisionThroughTheRealBinary: alice asks for a
// watch of a real feed from `herald chat`, the admin gets the prompt with
// its buttons and approves it from another `herald chat`, and alice's next
// session shows who decided; the approved task then checks the feed and
// alice's inbox gets the baseline confirmation.
func TestChat_RequestApprovalDecisionThroughTheRealBinary(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))

	out, errOut, code := chatCLI(t, dataDir, "alice", "/watch "+f.url()+" every 1h\n/tasks\n")
	if code != 0 {
		t.Fatalf("chat exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	rid := reRequest.FindString(out)
	if rid == "" {
		t.Fatalf("no request id in:\n%s", out)
	}
	tid := "t-" + strings.TrimPrefix(rid, "r-")
	for _, want := range []string{"Request " + rid, "host 127.0.0.1", "every 1h", "Who will be told: your inbox",
		"awaits an admin's approval", "is not in the allowed list; an admin can approve it with /approve " + rid,
		"Your tasks:", tid, "[pending approval]"} {
		if !strings.Contains(out, want) {
			t.Errorf("alice's session lacks %q:\n%s", want, out)
		}
	}

	// The admin's outbox holds the prompt, printed with its buttons.
	var adminOut string
	eventually(t, "the approval prompt in console:admin's outbox", func() bool {
		o, _, _ := chatCLI(t, dataDir, "admin", "")
		adminOut += o
		return strings.Contains(adminOut, "[Approve → /approve "+rid+"]")
	})
	for _, want := range []string{"Request " + rid + " from alice (console:alice)", "[Reject → /reject " + rid + "]"} {
		if !strings.Contains(adminOut, want) {
			t.Errorf("admin's prompt lacks %q:\n%s", want, adminOut)
		}
	}
	out, _, code = chatCLI(t, dataDir, "admin", "/approve "+rid+"\n")
	if code != 0 || !strings.Contains(out, "Approved "+rid+" by console:admin") {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}

	var aliceOut string
	eventually(t, "the decision in console:alice's outbox", func() bool {
		o, _, _ := chatCLI(t, dataDir, "alice", "")
		aliceOut += o
		return strings.Contains(aliceOut, "Your request "+rid+" was approved by console:admin")
	})
	eventually(t, "the baseline notice in alice's inbox", func() bool {
		o, _, _ := chatCLI(t, dataDir, "alice", "/inbox\n")
		return strings.Contains(o, "Unread (")
	})
	out, _, _ = chatCLI(t, dataDir, "alice", "/tasks\n/task "+tid+"\n")
	for _, want := range []string{"[active]", "Approved scope: watch on 127.0.0.1:", "by console:admin"} {
		if !strings.Contains(out, want) {
			t.Errorf("alice's /tasks after approval lacks %q:\n%s", want, out)
		}
	}
}

// TestChat_FollowUpQuestionAcrossLines: a /watch without a schedule asks,
// and the next line answers it.
func TestChat_FollowUpQuestionAcrossLines(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out, _, code := chatCLI(t, dataDir, "admin", "/watch "+f.url()+"\nok\n")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"How often should I check? e.g. every 1h (default), daily 08:00", "every 1h", "Approved — task t-"} {
		if !strings.Contains(out, want) {
			t.Errorf("session lacks %q:\n%s", want, out)
		}
	}
}

func TestChat_ServiceNotRunningExits3WithHint(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	out, errOut, code := chatCLI(t, dataDir, "alice", "/help\n")
	if code != exitNotRunning || !strings.Contains(errOut, "herald is not running") || !strings.Contains(errOut, "herald serve") || out != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func TestChat_BadNameIsAUsageError(t *testing.T) {
	_, errOut, code := chatCLI(t, t.TempDir(), "no/slashes", "")
	if code != exitUsage || !strings.Contains(errOut, "a name has 1-32 letters") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
