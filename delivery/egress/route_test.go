package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery/egress/proxytest"
)

// noDNS resolves nothing and asks no server: every name is one that
// "does not resolve here".
var noDNS = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no DNS in this test")
}}

const secret = "s3cr3t-pa55"

// origin is a target server on loopback answering "hello from <name>".
func originServer(t *testing.T, name string, tlsNames ...string) (*httptest.Server, *proxytest.Cert) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello from "+name) })
	if len(tlsNames) == 0 {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return s, nil
	}
	return proxytest.NewTLSServer(t, h, tlsNames...)
}

func proxyRoute(t *testing.T, proxyURL string) *Route {
	t.Helper()
	r, err := NewRoute("gfw", proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func getVia(t *testing.T, o Options, target string) (string, error) {
	t.Helper()
	o.Resolver = noDNS
	resp, err := Client(o).Get(target)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

func hostOf(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }

// A name that resolves only inside the proxy is reached through it, with
// private networks not allowed: plain http as an absolute-URI request,
// https through CONNECT, both through SOCKS5 with username/password.
func TestProxy_TargetsReachableOnlyThroughTheProxy(t *testing.T) {
	plain, _ := originServer(t, "feed")
	secure, cert := originServer(t, "hooks", "hooks.ops.test")
	hosts := map[string]string{"feed.campus.test:80": hostOf(plain), "hooks.ops.test:443": hostOf(secure)}
	httpProxy := proxytest.NewHTTP(t, hosts, "herald", secret)
	socks := proxytest.NewSOCKS5(t, hosts, "herald", secret)
	for _, tc := range []struct {
		name, proxy, target, want string
	}{
		{"http proxy, absolute URI", httpProxy.URL(), "http://feed.campus.test/feed.xml", "hello from feed"},
		{"http proxy, CONNECT", httpProxy.URL(), "https://hooks.ops.test/h", "hello from hooks"},
		{"socks5h", socks.URL(), "http://feed.campus.test/feed.xml", "hello from feed"},
		{"socks5h, TLS", socks.URL(), "https://hooks.ops.test/h", "hello from hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := getVia(t, Options{Route: proxyRoute(t, tc.proxy), RootCAs: cert.Pool}, tc.target)
			if err != nil || body != tc.want {
				t.Fatalf("got %q, %v; want %q", body, err, tc.want)
			}
		})
	}
	// Without the proxy the names lead nowhere: success above went through it.
	if _, err := getVia(t, Options{RootCAs: cert.Pool}, "https://hooks.ops.test/h"); err == nil {
		t.Fatal("a direct request to a name only the proxy knows succeeded")
	}
}

// A literal loopback or private target is refused before any proxy is
// asked; a name that resolves here to a private address is refused too.
func TestProxy_GuardJudgesTargetsBeforeTheProxy(t *testing.T) {
	srv, _ := originServer(t, "inside")
	p := proxytest.NewHTTP(t, map[string]string{"intranet.test": hostOf(srv)}, "", "")
	s5 := proxytest.NewSOCKS5(t, map[string]string{"intranet.test": hostOf(srv)}, "", "")
	for _, pr := range []*proxytest.Proxy{p, s5} {
		for _, target := range []string{srv.URL + "/x", "http://10.1.2.3/", "http://localhost/", "https://[::1]/"} {
			_, err := getVia(t, Options{Route: proxyRoute(t, pr.URL())}, target)
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("%s via proxy: err %v, want ErrBlocked", target, err)
			}
		}
		if got := pr.Targets(); len(got) != 0 {
			t.Fatalf("the proxy was asked for %v", got)
		}
	}
	// A name the local resolver answers with a private address.
	dns := newFakeDNS(t, map[string][]string{"intranet.test": {"10.0.0.7"}})
	o := Options{Route: proxyRoute(t, p.URL()), Resolver: dns.resolver()}
	if _, err := Client(o).Get("http://intranet.test/"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("name resolving to a private address: %v, want ErrBlocked", err)
	}
	if got := p.Targets(); len(got) != 0 {
		t.Fatalf("the proxy was asked for %v", got)
	}
}

// A proxy on loopback is allowed whatever allow_private_networks says:
// the guard judges targets, not the admin's proxy. A wrong password is a
// ProxyError of kind auth naming the proxy, never the password; a proxy
// that is down is ProxyConnect; both are NotSent.
func TestProxy_FailuresAreClassifiedAndNamed(t *testing.T) {
	srv, cert := originServer(t, "api", "api.telegram.test")
	hosts := map[string]string{"api.telegram.test:443": hostOf(srv), "feed.campus.test:80": hostOf(srv)}
	httpProxy := proxytest.NewHTTP(t, hosts, "herald", secret)
	socks := proxytest.NewSOCKS5(t, hosts, "herald", secret)
	down := proxytest.NewSOCKS5(t, hosts, "", "")
	downURL := down.URL()
	down.Close()
	for _, tc := range []struct {
		name, proxy, target, kind string
	}{
		{"407 on CONNECT", httpProxy.URLWith("herald", "wrong-"+secret), "https://api.telegram.test/", ProxyAuth},
		{"407 on an absolute URI", httpProxy.URLWith("herald", "wrong-"+secret), "http://feed.campus.test/", ProxyAuth},
		{"socks auth", socks.URLWith("herald", "wrong-"+secret), "https://api.telegram.test/", ProxyAuth},
		{"socks down", downURL, "https://api.telegram.test/", ProxyConnect},
		{"http proxy down", strings.Replace(downURL, "socks5h", "http", 1), "https://api.telegram.test/", ProxyConnect},
		{"unknown target", socks.URL(), "https://elsewhere.test/", ProxyTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := getVia(t, Options{Route: proxyRoute(t, tc.proxy), RootCAs: cert.Pool}, tc.target)
			pe, ok := ProxyFailure(err)
			if !ok || pe.Kind != tc.kind || pe.Route != "gfw" {
				t.Fatalf("err %v (%#v), want a ProxyError %s of gfw", err, pe, tc.kind)
			}
			if !NotSent(err) {
				t.Fatal("a proxy failure is not NotSent")
			}
			if msg := Redact(err).Error(); strings.Contains(msg, secret) || !strings.Contains(msg, "gfw") {
				t.Fatalf("message %q: want the proxy's name and no secret", msg)
			}
		})
	}
}

// no_proxy hosts go direct on a proxied route; the environment route reads
// HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY.
func TestRoute_NoProxyAndEnvironment(t *testing.T) {
	rs, err := Network{NoProxy: []string{"*.campus.test", "10.0.0.0/8"}, Proxies: map[string]string{"gfw": "socks5h://127.0.0.1:7890"}, Proxy: "gfw"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	def, _ := rs.Get("")
	for target, want := range map[string]string{
		"https://api.telegram.org/": "gfw", "https://www.campus.test/": "direct", "http://10.2.3.4/": "direct", "http://127.0.0.1:8080/": "direct",
	} {
		u, _ := url.Parse(target)
		if got := def.Via(u); got != want {
			t.Errorf("%s: via %s, want %s", target, got, want)
		}
	}
	env := map[string]string{"ALL_PROXY": "socks5h://127.0.0.1:1080", "HTTP_PROXY": "http://127.0.0.1:3128", "NO_PROXY": "internal.test"}
	rs, err = Network{Getenv: func(k string) string { return env[k] }}.Build()
	if err != nil {
		t.Fatal(err)
	}
	def, _ = rs.Get("")
	for target, want := range map[string]string{
		"https://a.test/": "socks5h://127.0.0.1:1080", "http://a.test/": "http://127.0.0.1:3128", "https://internal.test/": "",
	} {
		u, _ := url.Parse(target)
		got := ""
		if p := def.ProxyFor(u); p != nil {
			got = p.String()
		}
		if got != want {
			t.Errorf("%s: proxy %q, want %q", target, got, want)
		}
	}
	env = map[string]string{"HTTPS_PROXY": "proxy.corp.test:3128"}
	rs, err = Network{Getenv: func(k string) string { return env[k] }}.Build()
	if def, _ := rs.Get(""); err != nil || def.ProxyFor(&url.URL{Scheme: "https", Host: "a.test"}).String() != "http://proxy.corp.test:3128" {
		t.Fatalf("a proxy variable without a scheme: %v", err)
	}
	env = map[string]string{"HTTPS_PROXY": "ftp://u:" + secret + "@p.test:21"}
	if _, err := (Network{Getenv: func(k string) string { return env[k] }}).Build(); err == nil ||
		!strings.Contains(err.Error(), "HTTPS_PROXY") || strings.Contains(err.Error(), secret) {
		t.Fatalf("an unusable proxy variable: %v", err)
	}
	if d, _ := rs.Get("direct"); d.Name() != "direct" {
		t.Fatalf("direct route is %s", d.Name())
	}
	if _, err := rs.Get("nope"); !errors.Is(err, ErrNoSuchProxy) {
		t.Fatalf("unknown name: %v", err)
	}
}

// A bad proxy URL is refused without printing it (it may hold a password).
func TestRoute_BadProxyNeverShowsItsURL(t *testing.T) {
	for _, raw := range []string{"ftp://u:" + secret + "@p:1", "socks4://u:" + secret + "@p:1", "http://u:" + secret + "@p:1/path"} {
		_, err := Network{Proxies: map[string]string{"campus": raw}}.Build()
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "campus") {
			t.Fatalf("%q: %v", raw, err)
		}
	}
}

// Dial opens a plain connection over the route, for checks and websockets.
func TestDial_ThroughEachKindOfProxy(t *testing.T) {
	srv, _ := originServer(t, "ws")
	hosts := map[string]string{"open.feishu.test:443": hostOf(srv)}
	for _, p := range []*proxytest.Proxy{proxytest.NewHTTP(t, hosts, "u", secret), proxytest.NewSOCKS5(t, hosts, "u", secret)} {
		target, _ := url.Parse("https://open.feishu.test/")
		c, via, err := Dial(context.Background(), Options{Route: proxyRoute(t, p.URL()), Resolver: noDNS}, target)
		if err != nil || via != "gfw" {
			t.Fatalf("dial via %s: %v", via, err)
		}
		c.Close()
		_, _, err = Dial(context.Background(), Options{Route: proxyRoute(t, p.URLWith("u", "bad")), Resolver: noDNS}, target)
		if pe, ok := ProxyFailure(err); !ok || pe.Kind != ProxyAuth {
			t.Fatalf("wrong password: %v", err)
		}
	}
}
