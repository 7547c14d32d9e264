package configs

import (
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/email"
)

// TestSMTP_SectionErrorsWithFileAndLine: a bad smtp section and an e-mail
// recipient without one are refused at the lines concerned, without
// quoting the password or any address.
func TestSMTP_SectionErrorsWithFileAndLine(t *testing.T) {
	_, err := loadString(t, `smtp:
  host: smtp.example.com
  port: 70000
  username: herald
  from: not-an-address
  tls: none
recipients:
  mail:
    email: {to: ["someone@example.com", "no-at-sign"]}
`, noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{1, "smtp: username and password go together"},
		{3, "smtp.port: must be a port number"},
		{5, "smtp.from: must be an e-mail address"},
		{6, "smtp.tls: none is allowed only to a loopback host"},
		{9, "recipients.mail.email.to[1]: is not an e-mail address"},
	})
	if strings.Contains(err.Error(), "someone@example.com") || strings.Contains(err.Error(), "no-at-sign") {
		t.Errorf("errors quote an address:\n%v", err)
	}

	_, err = loadString(t, "recipients:\n  mail:\n    email: {to: [\"a@example.com\"]}\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{3, "recipients.mail.email: needs the top-level smtp section"}})

	_, err = loadString(t, "smtp: {host: smtp.example.com, from: h@example.com, tls: ssl}\nrecipients:\n  mail:\n    email: {to: []}\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{1, "smtp.tls: must be starttls, tls or none"},
		{4, "recipients.mail.email: to is required"},
	})
}

// TestSMTP_LoopbackRelayWithoutTLSLoads: tls none is accepted for a
// loopback relay, and the section reaches the sink constructors.
func TestSMTP_LoopbackRelayWithoutTLSLoads(t *testing.T) {
	cfg, err := loadString(t, `smtp: {host: 127.0.0.1, port: 2525, from: "Herald <herald@example.edu>", tls: none}
recipients:
  mail:
    email: {to: ["a@example.edu", "b@example.edu"]}
`, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cfg.SinkSections()[email.SectionKey].(*email.SMTP)
	if s == nil || s.Port != 2525 || s.Mode() != email.TLSNone {
		t.Fatalf("smtp section = %+v", s)
	}
	if to := cfg.Recipients["mail"].Email.To; len(to) != 2 {
		t.Errorf("to = %d addresses", len(to))
	}
}

// TestSMTP_HostForms: an IPv6 address is written in brackets, the port is
// its own key, and tls none accepts a bracketed loopback address.
func TestSMTP_HostForms(t *testing.T) {
	_, err := loadString(t, "smtp: {host: \"::1\", from: h@example.com}\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{1, "smtp.host: write an IPv6 address in brackets"}})
	_, err = loadString(t, "smtp: {host: \"smtp.example.com:587\", from: h@example.com}\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{1, "smtp.host: must be a host name or an address, without scheme or port"}})
	if _, err := loadString(t, "smtp: {host: \"[::1]\", from: h@example.com, tls: none}\n", noEnv); err != nil {
		t.Errorf("a bracketed loopback relay: %v", err)
	}
}
