// Package egress is herald's one outbound HTTP path. Every request the
// service makes to an address chosen by a user or an admin (watched
// sources, webhook recipients) goes through the guard here: the address is
// checked after DNS resolution, at dial time, for every connection, so DNS
// rebinding and redirect targets are covered as well as literal addresses.
//
// A name may resolve to several addresses. The dialer tries them in turn
// and the guard judges each attempt before its connect, so a refused
// address is never connected to: a name with one public and one private
// answer reaches only the public address, and one with only refused
// answers fails with ErrBlocked. Refusing the whole name for one private
// answer would add nothing, since the public address alone is what its
// owner could have published anyway.
//
// egress also owns the routes (SPEC §17): Options.Route sends requests
// direct or through an HTTP, HTTPS or SOCKS5 proxy. The guard keeps
// judging targets, not proxies: a proxied target is judged before the
// proxy is asked (route.go, proxy.go).
package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/go-resty/resty/v2"
)

// Version is the product version reported in the default User-Agent.
var Version = "dev"

// Defaults applied when an Options field is zero.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultTimeout        = 30 * time.Second
)

// ErrBlocked reports that the guard refused the destination address. It is
// reachable with errors.Is through *url.Error and *net.OpError.
var ErrBlocked = errors.New("destination address not allowed")

// ErrBadURL reports a URL that egress will not request at all.
var ErrBadURL = errors.New("URL not allowed")

// Options configures the outbound client.
type Options struct {
	// AllowPrivate mirrors policy.allow_private_networks: loopback, private
	// and link-local destinations are allowed, on any port.
	AllowPrivate bool
	// ConnectTimeout bounds the TCP connect and the TLS handshake (default 5s).
	ConnectTimeout time.Duration
	// Timeout bounds the whole request including reading the body (default 30s).
	Timeout time.Duration
	// UserAgent is sent unless a request sets its own.
	UserAgent string
	// Trusted lists exact destinations (resolved address and port) allowed
	// whatever the policy: an operator's explicitly trusted endpoint, or a
	// test's own server on 127.0.0.1 while everything else stays guarded.
	Trusted []netip.AddrPort
	// Resolver looks names up (nil: the system resolver). Tests point it
	// at their own DNS server; the guard judges whatever it answers.
	Resolver *net.Resolver
	// Route is the way out (SPEC §17): nil goes direct. Through a proxy
	// the guard still judges the target, before the proxy is asked.
	Route *Route
	// AnyAddress turns the guard off for an endpoint the admin configured
	// rather than one a user chose: a chat platform's API URL. The route
	// still applies.
	AnyAddress bool
	// RootCAs are the certificate authorities trusted for TLS (nil: the
	// system's).
	RootCAs *x509.CertPool
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent()
	}
	return o
}

// DefaultUserAgent is the polite User-Agent herald sends.
func DefaultUserAgent() string {
	return "herald/" + Version + " (+https://github.com/herald-bridge/herald)"
}

// guardian is the strict policy: public unicast only, ports 80 and 443.
var guardian = ssrf.New()

// Guard is the dial-time check used as net.Dialer.Control. address is the
// resolved "ip:port". IPv4-mapped IPv6 addresses are unmapped first, so
// [::ffff:127.0.0.1] is judged as 127.0.0.1. Destinations in trusted pass.
func Guard(allowPrivate bool, trusted ...netip.AddrPort) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: unparseable destination", ErrBlocked)
		}
		unmapped := netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
		for _, t := range trusted {
			if t == unmapped {
				return nil
			}
		}
		if allowPrivate {
			if IsMetadata(unmapped.Addr()) {
				return &BlockedError{Kind: KindMetadata}
			}
			return nil
		}
		return checkAddr(network, ap)
	}
}

func checkAddr(network string, ap netip.AddrPort) error {
	ip := ap.Addr()
	if ip.Is4In6() {
		ip = ip.Unmap()
		network = "tcp4"
	}
	ip = ip.WithZone("")
	if !strings.HasPrefix(network, "tcp") {
		return fmt.Errorf("%w: network %s", ErrBlocked, network)
	}
	if ip.Is4() {
		network = "tcp4"
	} else {
		network = "tcp6"
	}
	err := guardian.Safe(network, netip.AddrPortFrom(ip, ap.Port()).String(), nil)
	if err == nil {
		return nil
	}
	// The address is the reason more often than the port (a local test
	// server on a high port): say so first. The address itself stays out
	// of the message: it may identify a recipient (I10).
	if errors.Is(err, ssrf.ErrProhibitedPort) && guardian.Safe(network, netip.AddrPortFrom(ip, 443).String(), nil) == nil {
		return &BlockedError{Kind: KindPort, Port: int(ap.Port())}
	}
	return &BlockedError{Kind: addrKind(ip)}
}

// Kinds of refusal a BlockedError names.
const (
	KindLoopback  = "loopback"
	KindPrivate   = "private"
	KindLinkLocal = "link-local"
	KindNonPublic = "non-public"
	KindPort      = "port"
	// KindMetadata is a cloud instance-metadata address, refused even
	// with private networks allowed: it hands out the host's credentials.
	KindMetadata = "cloud metadata"
)

// metadataAddrs are the cloud instance-metadata endpoints (AWS, GCP, Azure
// and others on 169.254.169.254; AWS's IPv6 one on fd00:ec2::254).
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// IsMetadata reports whether ip is a cloud instance-metadata address.
func IsMetadata(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

// BlockedError says why the guard refused a destination: the kind of
// address (KindLoopback, KindPrivate, KindLinkLocal, KindNonPublic), or
// KindPort for a public address on a port other than 80 and 443. It never
// holds the address. errors.Is(err, ErrBlocked) holds.
type BlockedError struct {
	Kind string
	Port int
}

func (e *BlockedError) Error() string {
	if e.Kind == KindPort {
		return fmt.Sprintf("%v: port %d", ErrBlocked, e.Port)
	}
	return fmt.Sprintf("%v: %s address", ErrBlocked, e.Kind)
}

func (e *BlockedError) Unwrap() error { return ErrBlocked }

// addrKind names the class of a refused address.
func addrKind(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return KindLoopback
	case ip.IsPrivate():
		return KindPrivate
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return KindLinkLocal
	}
	return KindNonPublic
}

// Transport returns a fresh guarded transport on o's route: every direct
// dial checked by Guard, every proxied target judged before the proxy is
// asked (the proxy's own address is the admin's and is not judged), TLS
// handshake bounded by ConnectTimeout.
func Transport(o Options) http.RoundTripper {
	return newTransport(o.withDefaults())
}

// shared holds one guarded transport per distinct guard and timeouts, so
// every client built with the same Options (all webhook recipients,
// sources, and the sinks a reload builds again) draws on one pool of kept
// connections instead of dialling its own.
var shared sync.Map // transportKey -> *http.Transport

type transportKey struct {
	allowPrivate            bool
	connectTimeout, timeout time.Duration
	trusted                 string
	resolver                *net.Resolver
	route                   string
	anyAddress              bool
	roots                   *x509.CertPool
}

// SharedTransport returns the guarded transport shared by every caller
// with the same guard, timeouts, resolver and route.
func SharedTransport(o Options) http.RoundTripper {
	o = o.withDefaults()
	k := transportKey{allowPrivate: o.AllowPrivate, connectTimeout: o.ConnectTimeout, timeout: o.Timeout,
		trusted: fmt.Sprint(o.Trusted), resolver: o.Resolver, route: o.Route.Key(), anyAddress: o.AnyAddress, roots: o.RootCAs}
	if t, ok := shared.Load(k); ok {
		return t.(*routed)
	}
	t, _ := shared.LoadOrStore(k, newTransport(o))
	return t.(*routed)
}

func newTransport(o Options) *routed {
	return &routed{o: o, base: &http.Transport{
		// The proxy, when there is one, comes from the hop routed put in
		// the request's context; SOCKS proxies are dialled, not named here.
		Proxy:                  proxyFromContext,
		OnProxyConnectResponse: onConnect,
		DialContext:            newDialer(o).DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.ConnectTimeout,
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    128, // the dispatcher's workers plus its direct hand-offs: reuse, don't redial
		IdleConnTimeout:        90 * time.Second,
	}}
}

// noRedirect hands the 3xx response back to the caller instead of following it.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Client returns a guarded client that never follows redirects: a 3xx comes
// back as the response. The User-Agent is set on requests that carry none.
// Clients with the same guard and timeouts share one transport
// (SharedTransport), so their connections are kept and reused together.
func Client(o Options) *http.Client {
	o = o.withDefaults()
	return &http.Client{
		Transport:     &userAgent{base: SharedTransport(o), ua: o.UserAgent},
		CheckRedirect: noRedirect,
		Timeout:       o.Timeout,
	}
}

// Resty returns a resty client on the guarded transport: no redirects, no
// resty retries.
func Resty(o Options) *resty.Client {
	o = o.withDefaults()
	c := resty.NewWithClient(Client(o))
	c.SetRetryCount(0)
	c.SetTimeout(o.Timeout)
	c.SetHeader("User-Agent", o.UserAgent)
	return c
}

// userAgent sets a default User-Agent header.
type userAgent struct {
	base http.RoundTripper
	ua   string
}

var _ http.RoundTripper = (*userAgent)(nil)

func (u *userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("User-Agent") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("User-Agent", u.ua)
	}
	return u.base.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (u *userAgent) CloseIdleConnections() {
	if c, ok := u.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// CheckURL validates a destination URL before any request: http or https
// only; http only for loopback hosts and only with allowPrivate (local
// webhook recipients in development); no userinfo. A literal address or
// port the guard would refuse fails early with ErrBlocked. The URL itself
// never appears in the returned error.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: unparseable", ErrBadURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in URL", ErrBadURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrBadURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !allowPrivate || !IsLoopbackHost(host) {
			return fmt.Errorf("%w: http is only allowed for loopback hosts with private networks enabled", ErrBadURL)
		}
	default:
		return fmt.Errorf("%w: scheme must be https", ErrBadURL)
	}
	return checkHostPort(u, allowPrivate)
}

// checkHostPort refuses literal addresses and ports the dial guard would refuse.
func checkHostPort(u *url.URL, allowPrivate bool) error {
	if allowPrivate {
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && IsMetadata(ip) {
			return &BlockedError{Kind: KindMetadata}
		}
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	if IsLoopbackHost(u.Hostname()) {
		return &BlockedError{Kind: KindLoopback}
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := checkAddr("tcp", netip.AddrPortFrom(ip, 443)); err != nil {
			return err
		}
	}
	if port != "80" && port != "443" {
		n, _ := strconv.Atoi(port)
		return &BlockedError{Kind: KindPort, Port: n}
	}
	return nil // a name: judged at dial time on what it resolves to
}

// IsLoopbackHost reports whether host is "localhost" (or a name under
// .localhost) or a loopback address.
func IsLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}
