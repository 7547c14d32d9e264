package egress

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// Route names that are not a configured proxy's name (SPEC §17).
const (
	// RouteDirect is no proxy at all.
	RouteDirect = "direct"
	// RouteEnvironment is the environment's HTTPS_PROXY, HTTP_PROXY,
	// ALL_PROXY and NO_PROXY: the default when network.proxy is empty.
	RouteEnvironment = "environment"
	// RouteDefault names network.proxy when it is a URL.
	RouteDefault = "default"
)

// Proxy URL schemes herald dials through.
var proxySchemes = []string{"http", "https", "socks5", "socks5h"}

// ErrNoSuchProxy reports a route name that network.proxies does not define.
var ErrNoSuchProxy = errors.New("no such proxy in network.proxies")

// ErrBadProxy reports a proxy URL herald cannot use. The URL itself is
// never part of the message: it may carry a password.
var ErrBadProxy = errors.New("proxy URL not usable")

// Network is the network section of the config: the default route, the
// hosts that always go direct, and the named proxies (SPEC §17).
type Network struct {
	// Proxy is the default route: "" the environment, "direct" none, a
	// name from Proxies, or a proxy URL.
	Proxy string
	// NoProxy lists hosts, *.domains and CIDRs that always go direct.
	NoProxy []string
	// Proxies are the named proxy URLs.
	Proxies map[string]string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// ParseProxy checks a proxy URL: scheme http, https, socks5 or socks5h, a
// host and nothing but user:password besides. The error never holds the URL.
func ParseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: unparseable", ErrBadProxy)
	}
	if !slices.Contains(proxySchemes, strings.ToLower(u.Scheme)) {
		return nil, fmt.Errorf("%w: the scheme must be one of %s", ErrBadProxy, strings.Join(proxySchemes, ", "))
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: no host", ErrBadProxy)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: a proxy URL has no path or query", ErrBadProxy)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Path = ""
	return u, nil
}

// Routes are the routes of one Network, by name.
type Routes struct {
	def   *Route
	named map[string]*Route
}

// Build checks n and makes its routes. Errors name the proxy, never its URL.
func (n Network) Build() (*Routes, error) {
	getenv := n.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	noProxy := strings.Join(n.NoProxy, ",")
	rs := &Routes{named: map[string]*Route{}}
	var errs []error
	for name, raw := range n.Proxies {
		if name == RouteDirect || name == RouteEnvironment || name == RouteDefault {
			errs = append(errs, fmt.Errorf("proxy %s: the name is reserved", name))
			continue
		}
		r, err := fixedRoute(name, raw, noProxy)
		if err != nil {
			errs = append(errs, fmt.Errorf("proxy %s: %w", name, err))
			continue
		}
		rs.named[name] = r
	}
	switch p := strings.TrimSpace(n.Proxy); {
	case p == "":
		r, err := envRoute(getenv, noProxy)
		if err != nil {
			errs = append(errs, err)
		}
		rs.def = r
	case p == RouteDirect:
		rs.def = nil
	case rs.named[p] != nil:
		rs.def = rs.named[p]
	case strings.Contains(p, "://"):
		r, err := fixedRoute(RouteDefault, p, noProxy)
		if err != nil {
			errs = append(errs, fmt.Errorf("network.proxy: %w", err))
		}
		rs.def = r
	default:
		errs = append(errs, fmt.Errorf("network.proxy: %w: %s", ErrNoSuchProxy, p))
	}
	return rs, errors.Join(errs...)
}

// Get returns the route a proxy: setting names: "" the default route,
// "direct" none (a nil *Route), or a name from network.proxies.
func (rs *Routes) Get(name string) (*Route, error) {
	switch name {
	case "":
		if rs == nil {
			return nil, nil
		}
		return rs.def, nil
	case RouteDirect:
		return nil, nil
	}
	if rs != nil {
		if r, ok := rs.named[name]; ok {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoSuchProxy, name)
}

// Route is one way out: direct (nil), the environment's proxies, or one
// proxy URL; hosts in no_proxy go direct on every route. A nil *Route is
// direct.
type Route struct {
	name  string
	proxy func(*url.URL) (*url.URL, error)
	// key identifies the route for sharing transports. It holds the
	// proxy URLs, credentials included: it is never shown.
	key string
	// secrets are the proxy passwords, scrubbed from any error text.
	secrets []string
}

// NewRoute is the route through the one proxy at proxyURL, shown as
// name; noProxy hosts, *.domains and CIDRs go direct. Its error never
// holds the URL.
func NewRoute(name, proxyURL string, noProxy ...string) (*Route, error) {
	return fixedRoute(name, proxyURL, strings.Join(noProxy, ","))
}

func fixedRoute(name, raw, noProxy string) (*Route, error) {
	u, err := ParseProxy(raw)
	if err != nil {
		return nil, err
	}
	s := u.String()
	cfg := httpproxy.Config{HTTPProxy: s, HTTPSProxy: s, NoProxy: noProxy}
	return &Route{name: name, proxy: cfg.ProxyFunc(), key: name + "\x00" + s + "\x00" + noProxy, secrets: userSecrets(u)}, nil
}

// envRoute reads the proxy variables the way Go does (upper case first),
// with ALL_PROXY as curl's fallback for either scheme. A value without a
// scheme is an http proxy, as for curl and Go; a value herald cannot use
// is an error naming the variable, never going direct in its stead.
func envRoute(getenv func(string) string, noProxy string) (*Route, error) {
	var errs []error
	get := func(names ...string) string {
		for _, n := range names {
			v := strings.TrimSpace(getenv(n))
			if v == "" {
				continue
			}
			if !strings.Contains(v, "://") {
				v = "http://" + v
			}
			if _, err := ParseProxy(v); err != nil {
				errs = append(errs, fmt.Errorf("the environment's %s: %w", n, err))
			}
			return v
		}
		return ""
	}
	all := get("ALL_PROXY", "all_proxy")
	cfg := httpproxy.Config{
		HTTPProxy:  get("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: get("HTTPS_PROXY", "https_proxy"),
		NoProxy:    strings.Trim(cmp.Or(getenv("NO_PROXY"), getenv("no_proxy"))+","+noProxy, ","),
	}
	if cfg.HTTPProxy == "" {
		cfg.HTTPProxy = all
	}
	if cfg.HTTPSProxy == "" {
		cfg.HTTPSProxy = all
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.HTTPProxy == "" && cfg.HTTPSProxy == "" {
		return nil, nil
	}
	var secrets []string
	for _, raw := range []string{cfg.HTTPProxy, cfg.HTTPSProxy} {
		if u, err := url.Parse(raw); err == nil {
			secrets = append(secrets, userSecrets(u)...)
		}
	}
	return &Route{name: RouteEnvironment, proxy: cfg.ProxyFunc(),
		key: RouteEnvironment + "\x00" + cfg.HTTPProxy + "\x00" + cfg.HTTPSProxy + "\x00" + cfg.NoProxy, secrets: secrets}, nil
}

func userSecrets(u *url.URL) []string {
	if u.User == nil {
		return nil
	}
	out := []string{u.User.String()}
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p, url.QueryEscape(p))
	}
	return out
}

// Name is how the route is shown: "direct", "environment", "default" or
// the proxy's configured name.
func (r *Route) Name() string {
	if r == nil {
		return RouteDirect
	}
	return r.name
}

// Key identifies the route for caches of clients; it is never shown.
func (r *Route) Key() string {
	if r == nil {
		return ""
	}
	return r.key
}

// ProxyFor returns the proxy a request to target takes, or nil to go
// direct (no proxy configured, a no_proxy host, or a loopback target).
// ws targets are routed as http; wss and other schemes (smtp) as https,
// the proxy variables naming only web schemes.
func (r *Route) ProxyFor(target *url.URL) *url.URL {
	if r == nil || target == nil {
		return nil
	}
	t := *target
	switch strings.ToLower(t.Scheme) {
	case "http", "ws":
		t.Scheme = "http"
	default:
		t.Scheme = "https"
	}
	p, err := r.proxy(&t)
	if err != nil || p == nil {
		return nil
	}
	if u, err := ParseProxy(p.String()); err == nil {
		return u
	}
	return nil
}

// Via names the hop a request to target takes: the route's name, or
// "direct" when the target goes direct on this route.
func (r *Route) Via(target *url.URL) string {
	if r.ProxyFor(target) == nil {
		return RouteDirect
	}
	return r.name
}

// scrub removes the route's proxy credentials from s.
func (r *Route) scrub(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	return s
}
