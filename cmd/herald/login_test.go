package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/herald-bridge/herald/tasks/source/portaltest"
)

// A signed-in watch declared in the config signs in once, keeps its
// session in the credential store, and a restarted herald reads with
// that session instead of signing in again; neither the password nor
// the session is in a log, /metrics or the CLI's output.
func TestLogin_SessionKeptAcrossARestartAndThePasswordInNoOutput(t *testing.T) {
	portal := portaltest.New("选课通知", "考试安排")
	defer portal.Close()
	fx := newFixture(t)
	cfg := fx.config(t, "  - id: portal\n    source:\n      kind: html\n      url: \""+portal.URL+"/portal/notices\"\n      selector: li.notice\n"+
		"      auth:\n        login:\n          url: \""+portal.LoginURL()+"\"\n"+
		"          form: {username: \""+portaltest.Account+"\", password: \"${PORTAL_PASSWORD}\"}\n          check: PORTALSESSION\n"+
		"    schedule: every 30m\n    notify: [admin-inbox]\n")
	env := []string{hookSecretEnv + "=" + hookSecret, "PORTAL_PASSWORD=" + portaltest.Password}
	p, dataDir := startServe(t, cfg, env...)
	waitBaseline(t, dataDir, "portal")
	if row := listTasks(t, dataDir)["portal"]; row.LastOutcome != "baseline" {
		t.Fatalf("portal: %+v\nlog:\n%s", row, p.log.String())
	}
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	p2 := startServeAt(t, p.cfgPath, dataDir, env...)
	portal.Add("放假通知")
	out := cli(t, dataDir, "tasks", "run", "portal")
	if !strings.Contains(out, "1 new") {
		t.Fatalf("tasks run portal: %s", out)
	}
	if posts, logins := portal.Posts(); posts != 1 || logins != 1 {
		t.Fatalf("sign-in forms %d, sign-ins %d over a restart; want 1: the session is kept", posts, logins)
	}
	resp, err := http.Get(p2.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	shown := cli(t, dataDir, "tasks", "show", "portal", "--json") + out + p.log.String() + p2.log.String() + string(metrics)
	for _, secret := range []string{portaltest.Password, "PORTALSESSION=S-"} {
		if strings.Contains(shown, secret) {
			t.Fatalf("%q appears in a log, /metrics or the CLI's output", secret)
		}
	}
	if code := p2.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
