package configs

import (
	"strconv"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
)

// TestCheckConfigAgreesWithServe_WebhookRecipients: the same recipient
// URL gets the same verdict from the config check (what check-config
// runs) and from building its sink (what serve runs), with private
// networks off and on; loopback, unspecified and high-port recipients are
// refused by both without allow_private_networks.
func TestCheckConfigAgreesWithServe_WebhookRecipients(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	urls := []struct {
		url           string
		refusedPublic bool // refused without allow_private_networks
	}{
		{"https://127.0.0.1/x", true},
		{"https://127.0.0.1:8443/x", true},
		{"https://127.1.2.3/x", true},
		{"https://[::1]/x", true},
		{"https://[::1]:9000/x", true},
		{"https://[::ffff:127.0.0.1]/x", true},
		{"https://0.0.0.0/x", true},
		{"https://[::]/x", true},
		{"https://localhost/x", true},
		{"https://api.localhost/x", true},
		{"https://10.0.0.8/x", true},
		{"https://192.168.1.20/x", true},
		{"https://169.254.169.254/latest", true},
		{"https://[fd00::1]/x", true},
		{"https://hooks.example.com:8443/x", true},
		{"https://hooks.example.com:65535/x", true},
		{"http://127.0.0.1:9000/x", true},
		{"https://hooks.example.com/x", false},
		{"https://hooks.example.com:443/x", false},
		{"https://93.184.215.14/x", false},
	}
	for _, private := range []bool{false, true} {
		for _, tt := range urls {
			name := tt.url + " private=" + strconv.FormatBool(private)
			src := "policy: {allow_private_networks: " + strconv.FormatBool(private) + "}\n" +
				"recipients:\n  ops:\n    webhook:\n      url: \"" + tt.url + "\"\n      secret: \"" + secret + "\"\n"
			cfg, err := loadString(t, src, noEnv)
			checkOK := err == nil
			if err != nil && !strings.Contains(err.Error(), "recipients.ops.webhook.url") {
				t.Fatalf("%s: unexpected problem: %v", name, err)
			}
			if err != nil && strings.Contains(err.Error(), tt.url) {
				t.Errorf("%s: the problem prints the URL: %v", name, err)
			}
			// serve builds each recipient's sink from the same section.
			var sc delivery.SinkConfig
			if cfg != nil {
				sc = cfg.Recipients["ops"].Sink()
			} else {
				sc = &Webhook{URL: tt.url, Secret: secret}
			}
			_, serr := delivery.BuildSink(sc, delivery.SinkDeps{Name: "ops", Egress: egress.Options{AllowPrivate: private}})
			serveOK := serr == nil
			if checkOK != serveOK {
				t.Errorf("%s: check-config ok=%v (%v), serve ok=%v (%v)", name, checkOK, err, serveOK, serr)
			}
			// Cloud metadata is refused whatever the policy.
			metadata := strings.Contains(tt.url, "169.254.169.254")
			if want := (private && !metadata) || !tt.refusedPublic; checkOK != want {
				t.Errorf("%s: ok=%v, want %v (%v)", name, checkOK, want, err)
			}
		}
	}
}
