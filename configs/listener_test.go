package configs

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The inbound routes' bounds have documented defaults, may be set, and a
// bad value is refused with its file and line; trusted proxies are
// addresses or CIDRs.
func TestServer_InboundLimitsAndTrustedProxies(t *testing.T) {
	doc, err := os.ReadFile("herald.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"trusted_proxies: []", "per_client: 16", "max_in_flight: 256", "body_timeout: 10s", "unauthenticated_mib: 64"} {
		if !strings.Contains(string(doc), key) {
			t.Errorf("herald.example.yaml does not document %s", key)
		}
	}
	cfg, err := loadString(t, "", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Server.InboundLimits
	if l.PerClient != 16 || l.MaxInFlight != 256 || l.BodyTimeout.D() != 10*time.Second || l.UnauthenticatedMiB != 64 || len(cfg.Server.TrustedProxies) != 0 {
		t.Fatalf("defaults %+v, proxies %v", l, cfg.Server.TrustedProxies)
	}

	cfg, err = loadString(t, "server:\n  trusted_proxies: [\"10.0.0.0/8\", \"127.0.0.1\", \"fd00::/8\"]\n  inbound_limits: {per_client: 4, max_in_flight: 64, body_timeout: 5s, unauthenticated_mib: 16}\n", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Server.InboundLimits; l.PerClient != 4 || l.MaxInFlight != 64 || l.BodyTimeout.D() != 5*time.Second || l.UnauthenticatedMiB != 16 {
		t.Errorf("set limits %+v", l)
	}
	if !slices.Equal(cfg.Server.TrustedProxies, []string{"10.0.0.0/8", "127.0.0.1", "fd00::/8"}) {
		t.Errorf("proxies %v", cfg.Server.TrustedProxies)
	}

	cfg, err = loadString(t, "server:\n  trusted_proxies: [\"0.0.0.0/0\"]\n", noEnv)
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "server.trusted_proxies[0]: 0.0.0.0/0 trusts every address") {
		t.Errorf("trusting everyone: %v, warnings %q", err, cfg.Warnings)
	}

	_, err = loadString(t, "server:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - proxy.example.com\n    - 10.0.0.0/33\n  inbound_limits:\n    per_client: -1\n    max_in_flight: 10001\n    body_timeout: 30s\n    unauthenticated_mib: 5000\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{
		{4, `server.trusted_proxies[1]: "proxy.example.com" is not an IP address or CIDR`},
		{5, `server.trusted_proxies[2]: "10.0.0.0/33" is not an IP address or CIDR`},
		{7, "server.inbound_limits.per_client: must be between 1 and 10000"},
		{8, "server.inbound_limits.max_in_flight: must be between 1 and 10000"},
		{9, "server.inbound_limits.body_timeout: must be between 1s and 10s"},
		{10, "server.inbound_limits.unauthenticated_mib: must be between 1 and 4096"},
	})
}

// Changing the listener's bounds or proxies needs a restart, and a reload
// says so.
func TestRestartOnly_ListenerBoundsAndProxies(t *testing.T) {
	base := func() *Config {
		c := &Config{}
		c.Server.Listen = "127.0.0.1:8080"
		c.Server.TrustedProxies = []string{"10.0.0.0/8"}
		c.Server.InboundLimits.applyDefaults()
		return c
	}
	if got := RestartOnly(base(), base()); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	n := base()
	n.Server.TrustedProxies = append(n.Server.TrustedProxies, "192.168.0.0/16")
	if got := RestartOnly(base(), n); !slices.Equal(got, []string{"server"}) {
		t.Errorf("proxies changed: %v", got)
	}
	n = base()
	n.Server.InboundLimits.PerClient = 2
	if got := RestartOnly(base(), n); !slices.Equal(got, []string{"server"}) {
		t.Errorf("limits changed: %v", got)
	}
}
