package configs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Bounds of the inbound routes (/hooks/*, /telegram/webhook,
// /feishu/events): per client address, in all, and by memory for bodies
// not yet authenticated (docs/security.md, Security).
const (
	DefaultInboundPerClient = 16
	MaxInboundPerClient     = 10000
	DefaultInboundInFlight  = 256
	MaxInboundInFlight      = 10000
	// OtherRoutesInFlight is the share of the listener the console, the
	// admin, inbox and agent APIs keep beside the inbound routes'.
	OtherRoutesInFlight  = 256
	DefaultBodyTimeout   = 10 * time.Second
	MinBodyTimeout       = time.Second
	MaxBodyTimeout       = 10 * time.Second
	DefaultUnauthBodyMiB = 64
	MaxUnauthBodyMiB     = 4096
	MaxTrustedProxies    = 1000
)

// InboundLimits bound the routes the open internet reaches without an
// account. Zero values take the defaults.
type InboundLimits struct {
	// PerClient is how many requests one client address (IPv6: one /64)
	// may have open at once; the next gets 429.
	PerClient int `yaml:"per_client"`
	// MaxInFlight is how many requests all clients together may have
	// open at once; the next gets 503.
	MaxInFlight int `yaml:"max_in_flight"`
	// BodyTimeout is how long a body may take to arrive (1s-10s).
	BodyTimeout Duration `yaml:"body_timeout"`
	// UnauthenticatedMiB is the memory, in MiB, that bodies read but not
	// yet authenticated may hold, all clients together; the next gets 503.
	UnauthenticatedMiB int `yaml:"unauthenticated_mib"`
}

func (l *InboundLimits) applyDefaults() {
	if l.PerClient == 0 {
		l.PerClient = DefaultInboundPerClient
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultInboundInFlight
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = Duration(DefaultBodyTimeout)
	}
	if l.UnauthenticatedMiB == 0 {
		l.UnauthenticatedMiB = DefaultUnauthBodyMiB
	}
}

// equal compares two listener sections (Server holds a list).
func (s Server) equal(o Server) bool {
	return s.Listen == o.Listen && s.PublicURL == o.PublicURL && s.TLS == o.TLS &&
		s.InboundLimits == o.InboundLimits && slices.Equal(s.TrustedProxies, o.TrustedProxies)
}

// listener checks server.trusted_proxies and server.inbound_limits.
func (v *validator) listener() {
	s := v.cfg.Server
	if len(s.TrustedProxies) > MaxTrustedProxies {
		v.errf("server.trusted_proxies", "at most %d entries", MaxTrustedProxies)
	}
	for i, p := range s.TrustedProxies {
		path := fmt.Sprintf("server.trusted_proxies[%d]", i)
		bits, ok := proxyBits(p)
		switch {
		case !ok:
			v.errf(path, "%s is not an IP address or CIDR (such as 10.0.0.0/8)", v.d.quote(path, p))
		case bits == 0:
			v.cfg.Warnings = append(v.cfg.Warnings, fmt.Sprintf("%s: %s trusts every address, so any client can name itself in X-Forwarded-For and escape its per-client bound", path, p))
		}
	}
	l := s.InboundLimits
	if n := l.PerClient; n < 1 || n > MaxInboundPerClient {
		v.errf("server.inbound_limits.per_client", "must be between 1 and %d", MaxInboundPerClient)
	}
	if n := l.MaxInFlight; n < 1 || n > MaxInboundInFlight {
		v.errf("server.inbound_limits.max_in_flight", "must be between 1 and %d", MaxInboundInFlight)
	}
	if d := l.BodyTimeout.D(); !v.d.bad["server.inbound_limits.body_timeout"] && (d < MinBodyTimeout || d > MaxBodyTimeout) {
		v.errf("server.inbound_limits.body_timeout", "must be between %v and %v", MinBodyTimeout, MaxBodyTimeout)
	}
	if n := l.UnauthenticatedMiB; n < 1 || n > MaxUnauthBodyMiB {
		v.errf("server.inbound_limits.unauthenticated_mib", "must be between 1 and %d", MaxUnauthBodyMiB)
	}
}

// proxyBits parses an IP address or a CIDR and returns its prefix length.
func proxyBits(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Bits(), err == nil
	}
	a, err := netip.ParseAddr(s)
	return a.BitLen(), err == nil
}
