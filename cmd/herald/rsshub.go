package main

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// rsshubInstances are the configured RSSHub instances, in order.
func rsshubInstances(cfg *configs.Config) []source.Instance {
	var out []source.Instance
	for _, in := range cfg.Sources.RSSHub.Instances {
		if u, err := url.Parse(in.URL); err == nil {
			out = append(out, source.Instance{URL: u, Key: in.Key})
		}
	}
	return out
}

// rsshubBases are the instances' base URLs, for the catalog's policy.
func rsshubBases(cfg *configs.Config) []string {
	out := make([]string, 0, len(cfg.Sources.RSSHub.Instances))
	for _, in := range cfg.Sources.RSSHub.Instances {
		out = append(out, in.URL)
	}
	return out
}

// withRouteURL gives a declared rsshub source the URL scope and host
// limits judge: its route on the first instance.
func withRouteURL(cfg *configs.Config, spec watch.Spec) watch.Spec {
	insts := rsshubInstances(cfg)
	if spec.Kind != source.KindRSSHub || spec.URL != "" || len(insts) == 0 {
		return spec
	}
	if route, err := source.CleanRoute(spec.Route); err == nil {
		spec.Route = route
		spec.URL = source.RouteURL(insts[0].URL, route).String()
	}
	return spec
}

// currentConfig is the config in force (reload swaps it).
func (s *service) currentConfig() *configs.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

var _ conversation.Trier = sourceOpener{}

// Try fetches a requested source once with the options its runs would
// have, and with the RSSHub instances' Radar for a page without feeds.
func (o sourceOpener) Try(ctx context.Context, spec watch.Spec) (source.Trial, error) {
	cfg := o.s.currentConfig()
	zone := cfg.Location
	opts := o.options(spec, zone)
	radar := o.options(watch.Spec{Kind: source.KindRSSHub}, zone)
	if spec.Kind == source.KindRSSHub {
		opts = radar
	}
	return source.TryRequest(ctx, spec, opts, radar)
}

// rsshubTrusted are the exact addresses of the configured instances: a
// literal or loopback one as written, a named one (a compose service
// "rsshub:1200") as it resolves now, within lookupTimeout. The admin
// named them, so rsshub watches reach them whatever
// policy.allow_private_networks says; nothing else opens, and a name that
// later resolves elsewhere is judged by the guard again.
func rsshubTrusted(cfg *configs.Config) []netip.AddrPort {
	out := cfg.Sources.RSSHub.Trusted()
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	for _, in := range rsshubInstances(cfg) {
		host := in.URL.Hostname()
		if _, err := netip.ParseAddr(host); err == nil || strings.EqualFold(host, "localhost") {
			continue // Trusted has it
		}
		port := in.URL.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[in.URL.Scheme]
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			continue // the fetch says why
		}
		for _, a := range addrs {
			if !egress.IsMetadata(a.Unmap()) {
				out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(p)))
			}
		}
	}
	return out
}

// lookupTimeout bounds the lookup of the instances' names.
const lookupTimeout = 2 * time.Second
