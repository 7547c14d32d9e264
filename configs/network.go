package configs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/delivery/egress"
)

// Network is the network section: the routes every outbound client takes
// (SPEC §17).
type Network struct {
	// Proxy is the default route: "" the environment (HTTPS_PROXY,
	// HTTP_PROXY, ALL_PROXY, NO_PROXY), "direct" none, a name from
	// Proxies, or a proxy URL.
	Proxy string `yaml:"proxy"`
	// NoProxy lists hosts, *.domains and CIDRs that always go direct.
	NoProxy []string `yaml:"no_proxy"`
	// Proxies are named proxy URLs (http, https, socks5, socks5h); a
	// user:password in one is a secret.
	Proxies map[string]string `yaml:"proxies"`
}

// Routes builds the config's routes. A valid config builds without error.
func (c *Config) Routes() (*egress.Routes, error) {
	return egress.Network{Proxy: c.Network.Proxy, NoProxy: c.Network.NoProxy, Proxies: c.Network.Proxies}.Build()
}

// ProxySecrets are the credentials in the proxy URLs, for redaction (I10).
func (c *Config) ProxySecrets() []string {
	var out []string
	for _, raw := range append(slices.Collect(maps.Values(c.Network.Proxies)), c.Network.Proxy) {
		if u, err := egress.ParseProxy(raw); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// proxyNamer is a section that names a route (section.Route embedded).
type proxyNamer interface{ ProxyName() string }

// network checks the network section and every proxy: key that names a
// route. A proxy URL is never printed: it may hold a password.
func (v *validator) network() {
	n := v.cfg.Network
	for _, name := range slices.Sorted(maps.Keys(n.Proxies)) {
		p := "network.proxies." + name
		switch {
		case !namePattern.MatchString(name):
			v.errf(p, "proxy names use letters, digits, '.', '_' and '-'")
		case name == egress.RouteDirect || name == egress.RouteEnvironment || name == egress.RouteDefault:
			v.errf(p, "%q is reserved; choose another name", name)
		}
		if v.unsetErr(p) {
			continue
		}
		if _, err := egress.ParseProxy(n.Proxies[name]); err != nil {
			v.errf(p, "%v", proxyProblem(err))
		}
	}
	switch p := n.Proxy; {
	case v.unsetErr("network.proxy"), p == egress.RouteDirect:
	case p == "":
		// The default route is the environment's: serve reads the same
		// variables, so check-config says now what serve would refuse.
		if _, err := (egress.Network{}).Build(); err != nil {
			v.errf("network.proxy", "the default route is the environment's proxies, and %v", err)
		}
	case strings.Contains(p, "://"):
		if _, err := egress.ParseProxy(p); err != nil {
			v.errf("network.proxy", "%v", proxyProblem(err))
		}
	default:
		v.proxyRef("network.proxy", p)
	}
	for i, h := range n.NoProxy {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " ,") {
			v.errf(fmt.Sprintf("network.no_proxy[%d]", i), "want a host, *.domain or CIDR")
		}
	}
	v.proxyRef("channels.telegram.proxy", v.cfg.Channels.Telegram.Proxy)
	v.proxyRef("channels.feishu.proxy", v.cfg.Channels.Feishu.Proxy)
	v.proxyRef("assistant.proxy", v.cfg.Assistant.Proxy)
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Recipients)) {
		for _, s := range v.cfg.Recipients[name].Sinks() {
			if pn, ok := s.Config.(proxyNamer); ok {
				v.proxyRef("recipients."+name+"."+s.Key+".proxy", pn.ProxyName())
			}
		}
	}
	for i, t := range v.cfg.Tasks {
		v.proxyRef(fmt.Sprintf("tasks[%d].source.proxy", i), t.Source.Proxy)
	}
}

// proxyRef checks a proxy: key: "", "direct" or a name in network.proxies.
func (v *validator) proxyRef(path, name string) {
	if name == "" || name == egress.RouteDirect || v.unsetErr(path) {
		return
	}
	if _, ok := v.cfg.Network.Proxies[name]; !ok {
		known := slices.Sorted(maps.Keys(v.cfg.Network.Proxies))
		v.errf(path, "no proxy named %s in network.proxies (want \"direct\", \"\" for the default route, or one of: %s)",
			v.d.quote(path, name), strings.Join(append(known, "none defined")[:max(len(known), 1)], ", "))
	}
}

// proxyProblem is err's reason, without the sentinel's own words twice.
func proxyProblem(err error) string {
	msg := err.Error()
	if errors.Is(err, egress.ErrBadProxy) {
		msg = strings.TrimPrefix(msg, egress.ErrBadProxy.Error()+": ")
	}
	return "not a usable proxy URL: " + msg
}
