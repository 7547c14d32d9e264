package email_test

import (
	"context"
	"crypto/tls"
	"strconv"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/proxytest"
	"github.com/herald-bridge/herald/delivery/email"
	"github.com/herald-bridge/herald/delivery/email/emailtest"
)

// TestSend_ThroughTheRoute: an e-mail recipient whose section names a
// proxy reaches the SMTP server through it (SOCKS5 to a name only the
// proxy knows), with STARTTLS and with implicit TLS.
func TestSend_ThroughTheRoute(t *testing.T) {
	cert := proxytest.NewCert(t, "smtp.campus.test")
	cfg := &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12}
	for _, mode := range []string{email.TLSStartTLS, email.TLSImplicit} {
		m := emailtest.New(t, emailtest.WithTLS(cfg, mode == email.TLSImplicit))
		proxy := proxytest.NewSOCKS5(t, map[string]string{"smtp.campus.test": "127.0.0.1:" + strconv.Itoa(m.Port)}, "herald", "smtp-route-pw")
		route, err := egress.NewRoute("campus", proxy.URL())
		if err != nil {
			t.Fatal(err)
		}
		srv := email.SMTP{Host: "smtp.campus.test", Port: m.Port, Username: "herald", Password: password, From: "herald@example.edu", TLS: mode}
		if o := newSink(t, srv, email.WithRootCAs(cert.Pool), email.WithRoute(route)).Send(context.Background(), news("k", 1)); o.Result != delivery.Completed {
			t.Fatalf("%s through the proxy: %+v", mode, o)
		}
		if got := proxy.Targets(); len(got) != 1 || got[0] != "smtp.campus.test:"+strconv.Itoa(m.Port) {
			t.Fatalf("%s: the proxy carried %v", mode, got)
		}
		if len(m.Messages()) != 1 {
			t.Fatalf("%s: %d messages", mode, len(m.Messages()))
		}
	}
}
