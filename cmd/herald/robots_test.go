package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/robot/robottest"
)

const (
	wecomKey     = "3e8b1f0a-7c2d-4e5f-9a6b-0c1d2e3f4a5b"
	dingToken    = "9c2e4a6c8e0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e0a2c4e5d1f9a3c7e2b4d6f8a"
	dingSecret   = "SEC7a9f1e3b5c7d9a1f3e5b7c9d1f3a5e7b9c1d3f5a7e9b1b1c9e07d4a6f2e8b3c5d"
	dingTokenEnv = "HERALD_TEST_DING_TOKEN"
)

// dingSigned reports whether r carries a valid signature, computed here
// from the platform's recipe.
func dingSigned(r robottest.Request) bool {
	ts := r.Query.Get("timestamp")
	mac := hmac.New(sha256.New, []byte(dingSecret))
	mac.Write([]byte(ts + "\n" + dingSecret))
	return ts != "" && r.Query.Get("sign") == base64.StdEncoding.EncodeToString(mac.Sum(nil)) && r.Query.Get("access_token") == dingToken
}

// TestRobots_InboundHookArrivesOnceAtEachRobot_SendTestWorks: an inbound
// hook routed to a WeCom and a DingTalk robot arrives once at each, and
// send-test reaches both; the serve log carries neither key nor token.
func TestRobots_InboundHookArrivesOnceAtEachRobot_SendTestWorks(t *testing.T) {
	wecom := robottest.NewRobot(t, nil)
	ding := robottest.NewRobot(t, func(_ int, r robottest.Request) robottest.Answer {
		if !dingSigned(r) {
			return robottest.Answer{Code: 310000}
		}
		return robottest.Answer{}
	})
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"inbound: {}": "inbound:\n  ci:\n    format: standard\n    secret: \"${" + hookSecretEnv + "}\"\n    route: [wecom-team, ding-team]\n",
		"recipients:\n": "recipients:\n  wecom-team:\n    wecom_bot: {url: \"" + wecom.URL + "/cgi-bin/webhook/send?key=" + wecomKey + "\"}\n    language: zh\n" +
			"  ding-team:\n    dingtalk_bot: {url: \"" + ding.URL + "/robot/send?access_token=${" + dingTokenEnv + "}\", secret: \"" + dingSecret + "\"}\n",
	})
	p, dataDir := startServe(t, cfg, hookSecretEnv+"="+hookSecret, dingTokenEnv+"="+dingToken)

	body := []byte(`{"title":"构建 42 通过","url":"https://ci.example.com/42"}`)
	req, _ := http.NewRequest(http.MethodPost, p.url("/hooks/ci"), bytes.NewReader(body))
	req.Header = signHook(hookSecret, "msg_build42", time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /hooks/ci = %d, want 202", resp.StatusCode)
	}
	eventually(t, "the hook's pushes complete", func() bool {
		var fxs []effectRow
		cliJSON(t, dataDir, &fxs, "ledger", "show", "ci")
		done := 0
		for _, fx := range fxs {
			if fx.State == "completed" {
				done++
			}
		}
		return len(fxs) == 2 && done == 2
	})
	for name, rb := range map[string]*robottest.Robot{"wecom": wecom, "dingtalk": ding} {
		got := rb.Requests()
		if len(got) != 1 || !strings.Contains(string(got[0].Raw), "构建 42 通过") {
			t.Fatalf("%s robot got %d requests: %v", name, len(got), got)
		}
	}

	for _, name := range []string{"wecom-team", "ding-team"} {
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", name)
		if v.State != "completed" || v.Recipient != name || v.Attempts != 1 {
			t.Errorf("send-test %s = %+v", name, v)
		}
	}
	if len(wecom.Requests()) != 2 || len(ding.Requests()) != 2 {
		t.Errorf("after send-test: wecom %d, dingtalk %d requests, want 2 each", len(wecom.Requests()), len(ding.Requests()))
	}
	for _, s := range []string{wecomKey, dingToken, dingSecret} {
		if strings.Contains(p.log.String(), s) {
			t.Errorf("serve log carries a robot secret %q", s[:6])
		}
	}
}

// TestCheckConfig_RobotShapesWithLineNumbers: check-config reports each
// robot section's problem at its line and prints no key or token.
func TestCheckConfig_RobotShapesWithLineNumbers(t *testing.T) {
	cfg := strings.Join([]string{
		"recipients:", // 1
		"  wecom-team:",
		"    wecom_bot: {url: \"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?k=" + wecomKey + "\"}", // 3
		"  ding-team:",
		"    dingtalk_bot:", // 5
		"      url: \"https://oapi.dingtalk.com/robot/send?access_token=" + dingToken + "\"",
		"      secret: \"" + dingToken + "\"", // 7: the token pasted as the secret
		"",
	}, "\n")
	path := writeConfig(t, cfg)
	out, errOut, code := run(t, "check-config", "--config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{
		path + ":3: recipients.wecom-team.wecom_bot.url: must carry the robot's key",
		path + ":7: recipients.ding-team.dingtalk_bot.secret: must be the robot's signing secret",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, s := range []string{wecomKey, dingToken} {
		if strings.Contains(out+errOut, s) {
			t.Errorf("check-config output carries a secret:\n%s", errOut)
		}
	}
}
