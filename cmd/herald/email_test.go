package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/email/emailtest"
)

const (
	smtpPassword    = "smtp-pw-5b1e9c3a7d"
	smtpPasswordEnv = "HERALD_TEST_SMTP_PASSWORD"
	mailAddress     = "alice.student@example.edu"
)

// TestEmail_SendTestArrivesOnceAndFailsFast: send-test to an e-mail
// recipient submits exactly one message over SMTP; a refused address
// ends failed after one attempt; the serve log, the answers and
// /metrics carry neither the address nor the SMTP password.
func TestEmail_SendTestArrivesOnceAndFailsFast(t *testing.T) {
	mta := emailtest.New(t, emailtest.WithPassword(smtpPassword))
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		"recipients:\n": fmt.Sprintf("smtp: {host: 127.0.0.1, port: %d, username: herald, password: \"${%s}\", from: \"Herald <herald@example.edu>\", tls: none}\n", mta.Port, smtpPasswordEnv) +
			"recipients:\n  mail-team:\n    email: {to: [\"" + mailAddress + "\"]}\n",
	})
	p, dataDir := startServe(t, cfg, smtpPasswordEnv+"="+smtpPassword)

	var v sendTestView
	cliJSON(t, dataDir, &v, "send-test", "mail-team")
	if v.State != "completed" || v.Recipient != "mail-team" || v.Attempts != 1 || !strings.HasSuffix(v.ProviderID, "@herald.example.edu") {
		t.Errorf("send-test mail-team = %+v", v)
	}
	if got := mta.Messages(); len(got) != 1 || len(got[0].To) != 1 || got[0].To[0] != mailAddress {
		t.Fatalf("the server got %d messages, want 1: %+v", len(got), got)
	}

	mta.FailRcpt(emailtest.Error(550, [3]int{5, 1, 1}, "<"+mailAddress+">: no such user"))
	var failed sendTestView
	out, _, _ := run(t, "send-test", "mail-team", "--json", "--data-dir", dataDir)
	if err := json.Unmarshal([]byte(out), &failed); err != nil {
		t.Fatalf("send-test output %q: %v", out, err)
	}
	if failed.State != "failed" || failed.Attempts != 1 {
		t.Errorf("send-test to a refused address = %+v, want failed after one attempt", failed)
	}
	if n := len(mta.Messages()); n != 1 {
		t.Errorf("the server got %d messages, want still 1", n)
	}

	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, text := range []string{p.log.String(), out, string(metrics), failed.Error} {
		for _, s := range []string{mailAddress, smtpPassword} {
			if strings.Contains(text, s) {
				t.Errorf("%q leaks into logs, answers or metrics", s[:5])
			}
		}
	}
}
