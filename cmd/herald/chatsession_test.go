package main

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// liveChat is a `herald chat` fed line by line while it runs.
type liveChat struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *syncBuffer
	errOut *syncBuffer
	done   chan struct{}
	code   int
}

func startChat(t *testing.T, env []string, args ...string) *liveChat {
	t.Helper()
	cmd := exec.Command(heraldBin, append([]string{"chat"}, args...)...)
	cmd.Env = childEnv(env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &liveChat{t: t, cmd: cmd, in: in, out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.code = exitCode(cmd.Wait())
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		outputsOf(t).add(c.out.String(), c.errOut.String())
	})
	return c
}

// say sends one line and waits until stdout contains want.
func (c *liveChat) say(line, want string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		<-c.done
		c.t.Fatalf("write %q: %v; herald chat exited %d\nstdout:\n%s\nstderr:\n%s", line, err, c.code, c.out.String(), c.errOut.String())
	}
	eventually(c.t, "the answer to "+line+" contains "+want, func() bool {
		select {
		case <-c.done:
			c.t.Fatalf("herald chat exited %d after %q\nstdout:\n%s\nstderr:\n%s", c.code, line, c.out.String(), c.errOut.String())
		default:
		}
		return strings.Contains(c.out.String(), want)
	})
}

// end closes stdin and returns the exit code.
func (c *liveChat) end() int {
	c.t.Helper()
	_ = c.in.Close()
	<-c.done
	return c.code
}

// TestChat_SessionSurvivesAServiceRestart: a console session outlives a
// restart of the service: the next line reconnects through the new access
// record, says so once, and is answered.
func TestChat_SessionSurvivesAServiceRestart(t *testing.T) {
	p, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	c := startChat(t, nil, "--as", "alice", "--data-dir", dataDir)
	c.say("/tasks", "have no tasks")
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	p = startServeAt(t, p.cfgPath, dataDir)
	c.say("/help", "/remind")
	if code := p.signal(syscall.SIGKILL); code == 0 {
		t.Fatal("a killed serve exited 0")
	}
	p = startServeAt(t, p.cfgPath, dataDir)
	before := strings.Count(c.out.String(), "have no tasks")
	c.say("/tasks", "")
	eventually(t, "the /tasks after the second restart is answered", func() bool {
		return strings.Count(c.out.String(), "have no tasks") > before
	})
	if code := c.end(); code != exitOK {
		t.Fatalf("chat exit %d\nstderr:\n%s", code, c.errOut.String())
	}
	errOut := c.errOut.String()
	if n := strings.Count(errOut, "reconnected"); n != 2 {
		t.Errorf("want one reconnect note per restart (2), got %d:\n%s", n, errOut)
	}
	if strings.Contains(errOut+c.out.String(), "credentials") {
		t.Errorf("the session shows the credentials error:\n%s", errOut)
	}
}

// TestChat_LocalSourceRefusalIsExplained: with private networks off, a
// watch of a local feed is refused when asked, with what was refused and
// the setting that allows it — in English, and in Chinese for a Chinese
// message — and no task is made to fail later.
func TestChat_LocalSourceRefusalIsExplained(t *testing.T) {
	f := newFeed(t)
	cfg := strings.Replace(adjustExample(t, freeAddr(t), nil), "allow_private_networks: true", "allow_private_networks: false", 1)
	_, dataDir := startServe(t, cfg)
	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch "+f.url()+" every 1h\n/订阅 "+f.url()+" every 1h\n")
	if tid := reTaskID.FindString(out); code != 0 || tid != "" {
		t.Fatalf("watch: exit %d, task %q\n%s%s", code, tid, out, errOut)
	}
	for _, want := range []string{"127.0.0.1 is a loopback address; set policy.allow_private_networks for local sources",
		"127.0.0.1 是回环地址；本地来源需要设置 policy.allow_private_networks"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "port") {
		t.Errorf("the refusal blames the port:\n%s", out)
	}
}
