package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/robot/robottest"
)

// TestSendTest_FollowsADeadRobotUntilItAnswers: send-test to a robot that
// refuses connections prints the first attempt's outcome at once (no
// minutes of silence), then, following, each later attempt as it comes,
// and ends with the robot's answer once it is up.
func TestSendTest_FollowsADeadRobotUntilItAnswers(t *testing.T) {
	deadAddr := freeAddr(t) // nothing listens there yet
	cfg := adjustExample(t, freeAddr(t), map[string]string{
		"recipients:\n": "recipients:\n  wecom-dead:\n    wecom_bot: {url: \"http://" + deadAddr + "/cgi-bin/webhook/send?key=" + wecomKey + "\"}\n",
	})
	_, dataDir := startServe(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, "send-test", "wecom-dead", "--follow", "--data-dir", dataDir)
	cmd.Env = childEnv()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- exitCode(cmd.Wait()) }()

	eventually(t, "the first attempt's outcome is printed while send-test goes on", func() bool {
		return strings.Contains(out.String(), "wecom-dead: retry_after") && strings.Contains(out.String(), "(connect_failed) after 1 attempt(s)")
	})
	select {
	case code := <-done:
		t.Fatalf("send-test ended (%d) instead of following:\n%s%s", code, out.String(), errOut.String())
	default:
	}
	if !strings.Contains(errOut.String(), "Following the next attempts") {
		t.Errorf("stderr does not say it follows:\n%s", errOut.String())
	}
	robot := robottest.NewRobotAt(t, deadAddr, nil) // the robot comes up
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		t.Fatalf("send-test did not end once the robot answered:\n%s%s", out.String(), errOut.String())
	}
	if code != exitOK || !strings.Contains(out.String(), ": wecom-dead: completed") {
		t.Errorf("exit %d; the later attempt's outcome is not shown:\n%s%s", code, out.String(), errOut.String())
	}
	if n := len(robot.Requests()); n != 1 {
		t.Errorf("the robot got %d pushes, want 1", n)
	}
}
