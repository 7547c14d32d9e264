package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies is the set of reverse proxies whose X-Forwarded-For is believed.
// The zero value trusts nobody: the client is the TCP peer.
type Proxies []netip.Prefix

// ParseProxies reads addresses ("10.0.0.7", "::1") and CIDRs
// ("10.0.0.0/8", "fd00::/8"). The error names the entry, which is never a
// secret.
func ParseProxies(list []string) (Proxies, error) {
	out := make(Proxies, 0, len(list))
	for _, s := range list {
		p, err := parseProxy(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parseProxy(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// trusts reports whether a is one of the proxies.
func (ps Proxies) trusts(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Client returns the address of the client r comes from. The TCP peer is
// the client unless it is a trusted proxy; then X-Forwarded-For is read
// from the right, skipping trusted proxies, and the first address that is
// not one is the client (the semantics of nginx's real_ip_recursive and
// Caddy's trusted_proxies). Entries left of it were written by the client
// itself and are never believed. When every hop is trusted the left-most
// is the client; an unreadable entry ends the walk at the hop before it.
func (ps Proxies) Client(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsValid() || len(ps) == 0 || !ps.trusts(peer) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			e := strings.TrimSpace(entries[j])
			if e == "" {
				continue
			}
			a, ok := forwardedAddr(e)
			if !ok {
				return client
			}
			client = a
			if !ps.trusts(a) {
				return a
			}
		}
	}
	return client
}

// peerAddr parses a RemoteAddr ("ip:port", or a bare ip).
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().WithZone("").Unmap()
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("").Unmap()
}

// forwardedAddr parses one X-Forwarded-For entry: an address, possibly
// with a port ("203.0.113.9:4711", "[2001:db8::1]:443").
func forwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.WithZone("").Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// clientKey is the unit the per-client bound counts: an IPv4 address, or
// the /64 an IPv6 address belongs to (one host's usual allocation, which
// it can spread over 2^64 addresses).
func clientKey(a netip.Addr) netip.Addr {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
