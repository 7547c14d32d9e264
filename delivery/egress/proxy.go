package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/proxy"
)

// Kinds of proxy failure a ProxyError names.
const (
	// ProxyAuth: the proxy refused herald's credentials (HTTP 407, SOCKS
	// authentication failure). A configuration failure: retrying as it
	// is will not help.
	ProxyAuth = "auth"
	// ProxyConnect: the proxy could not be reached. Transient.
	ProxyConnect = "connect"
	// ProxyTarget: the proxy answered but did not open the tunnel to the
	// target (a CONNECT status other than 200, a SOCKS reply failure).
	ProxyTarget = "target"
)

// ErrProxy is reachable with errors.Is from every ProxyError.
var ErrProxy = errors.New("proxy failure")

// ProxyError is a failure of the proxy on a request's route, before the
// request reached its target: nothing was sent. It names the route (the
// proxy's configured name), never its URL, credentials or the target.
type ProxyError struct {
	Route  string
	Kind   string // ProxyAuth, ProxyConnect or ProxyTarget
	Status int    // the proxy's HTTP status, when it answered one
	Detail string // the cause, with no address or credential
}

func (e *ProxyError) Error() string {
	switch e.Kind {
	case ProxyAuth:
		return fmt.Sprintf("proxy %s refused the credentials%s: check network.proxies", e.Route, e.status())
	case ProxyConnect:
		return fmt.Sprintf("proxy %s cannot be reached%s", e.Route, e.detail())
	}
	return fmt.Sprintf("proxy %s did not connect to the target%s%s", e.Route, e.status(), e.detail())
}

func (e *ProxyError) status() string {
	if e.Status == 0 {
		return ""
	}
	return fmt.Sprintf(" (HTTP %d)", e.Status)
}

func (e *ProxyError) detail() string {
	if e.Detail == "" {
		return ""
	}
	return ": " + e.Detail
}

func (e *ProxyError) Unwrap() error { return ErrProxy }

// ProxyFailure returns the ProxyError in err's chain, if any.
func ProxyFailure(err error) (*ProxyError, bool) {
	var pe *ProxyError
	ok := errors.As(err, &pe)
	return pe, ok
}

// hop is the decision for one request: the proxy it goes through and the
// route that chose it. It travels in the request's context from the
// routed transport to the dialer.
type hop struct {
	route *Route
	proxy *url.URL
	addr  string // the proxy's host:port
}

type hopKey struct{}

func hopFrom(ctx context.Context) *hop {
	h, _ := ctx.Value(hopKey{}).(*hop)
	return h
}

func newHop(r *Route, p *url.URL) *hop {
	port := p.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[p.Scheme]
	}
	return &hop{route: r, proxy: p, addr: net.JoinHostPort(p.Hostname(), port)}
}

func (h *hop) socks() bool { return strings.HasPrefix(h.proxy.Scheme, "socks5") }

func (h *hop) fail(kind string, status int, cause error) *ProxyError {
	pe := &ProxyError{Route: h.route.Name(), Kind: kind, Status: status}
	if cause != nil {
		pe.Detail = h.route.scrub(RootCause(cause))
	}
	return pe
}

// RootCause is an error's innermost text, below the wrappers that name
// URLs and addresses (url.Error, net.OpError): what a person is told of a
// failed connection without the address in it.
func RootCause(err error) string {
	for {
		switch e := err.(type) {
		case *url.Error:
			err = e.Err
		case *net.OpError:
			err = e.Err
		case *net.DNSError:
			return "DNS: " + e.Err
		default:
			if errors.Is(err, context.DeadlineExceeded) {
				return "timed out"
			}
			return err.Error()
		}
	}
}

// judge decides whether a request to host:port may go through proxy p,
// before the proxy is asked (SPEC §17): a literal address is judged by
// the guard; a name is looked up here, and if it resolves, every address
// it resolves to is judged; a name that does not resolve here is the
// proxy's to resolve, except with socks5://, which resolves here (as
// curl does) and hands the proxy an address. It returns the address to
// hand a socks5:// proxy.
func (o Options) judge(ctx context.Context, p *url.URL, host string, port uint16) (string, error) {
	if o.AnyAddress {
		return host, nil
	}
	guard := Guard(o.AllowPrivate, o.Trusted...)
	check := func(ip netip.Addr) error {
		return guard("tcp", netip.AddrPortFrom(ip, port).String(), nil)
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return host, check(ip)
	}
	if IsLoopbackHost(host) {
		return host, check(netip.MustParseAddr("127.0.0.1"))
	}
	r := o.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	lctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	addrs, err := r.LookupNetIP(lctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		if p.Scheme == "socks5" {
			if err == nil {
				err = &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return "", err
		}
		if !o.AllowPrivate && port != 80 && port != 443 {
			return "", &BlockedError{Kind: KindPort, Port: int(port)}
		}
		return host, nil
	}
	for _, a := range addrs {
		if err := check(a.Unmap()); err != nil {
			return "", err
		}
	}
	return addrs[0].Unmap().String(), nil
}

func portOf(u *url.URL) uint16 {
	if p := u.Port(); p != "" {
		n, _ := strconv.ParseUint(p, 10, 16)
		return uint16(n)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return 80
	}
	return 443
}

// routed is the transport of one route: it decides each request's hop
// and judges its target before any proxy is asked, then hands it to the
// guarded transport underneath.
type routed struct {
	base *http.Transport
	o    Options
}

var _ http.RoundTripper = (*routed)(nil)

func (t *routed) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.o.Route.ProxyFor(req.URL)
	if p == nil {
		return t.base.RoundTrip(req) // direct: the dial guard judges it
	}
	if _, err := t.o.judge(req.Context(), p, req.URL.Hostname(), portOf(req.URL)); err != nil {
		return nil, err
	}
	h := newHop(t.o.Route, p)
	resp, err := t.base.RoundTrip(req.WithContext(context.WithValue(req.Context(), hopKey{}, h)))
	if err != nil {
		return nil, t.classify(h, err)
	}
	// Through an HTTP proxy a plain http request is answered by the proxy.
	if !h.socks() && strings.EqualFold(req.URL.Scheme, "http") && resp.StatusCode == http.StatusProxyAuthRequired {
		resp.Body.Close()
		return nil, h.fail(ProxyAuth, resp.StatusCode, nil)
	}
	return resp, nil
}

// classify keeps a ProxyError as it is and drops the proxy's URL and
// credentials from anything else the transport said about it.
func (t *routed) classify(h *hop, err error) error {
	if pe, ok := ProxyFailure(err); ok {
		return pe
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "proxyconnect" {
		return h.fail(ProxyConnect, 0, op.Err)
	}
	return err
}

func (t *routed) CloseIdleConnections() { t.base.CloseIdleConnections() }

// proxyFromContext is the transport's Proxy: the HTTP proxy the request's
// hop names. SOCKS proxies are dialled by dialRoute instead.
func proxyFromContext(req *http.Request) (*url.URL, error) {
	if h := hopFrom(req.Context()); h != nil && !h.socks() {
		return h.proxy, nil
	}
	return nil, nil
}

// onConnect classifies an HTTP proxy's answer to CONNECT.
func onConnect(ctx context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
	h := hopFrom(ctx)
	if h == nil || resp.StatusCode == http.StatusOK {
		return nil
	}
	if resp.StatusCode == http.StatusProxyAuthRequired {
		return h.fail(ProxyAuth, resp.StatusCode, nil)
	}
	return h.fail(ProxyTarget, resp.StatusCode, nil)
}

// dialer dials for one set of Options: the target through the guard, or
// the hop's proxy, which may be anywhere (the admin configured it).
type dialer struct {
	guarded, plain *net.Dialer
	o              Options
}

func newDialer(o Options) *dialer {
	return &dialer{
		guarded: &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: Guard(o.AllowPrivate, o.Trusted...), Resolver: o.Resolver},
		plain:   &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Resolver: o.Resolver},
		o:       o,
	}
}

// DialContext is the transport's dialer.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	h := hopFrom(ctx)
	switch {
	case h == nil:
		if d.o.AnyAddress {
			return d.plain.DialContext(ctx, network, addr)
		}
		return d.guarded.DialContext(ctx, network, addr)
	case h.socks():
		return d.socks(ctx, h, network, addr)
	}
	c, err := d.plain.DialContext(ctx, network, h.addr)
	if err != nil {
		return nil, h.fail(ProxyConnect, 0, err)
	}
	return c, nil
}

// proxyDialError marks a failure to reach the SOCKS proxy itself.
type proxyDialError struct{ err error }

func (e *proxyDialError) Error() string { return e.err.Error() }
func (e *proxyDialError) Unwrap() error { return e.err }

// socks opens a connection to addr through the hop's SOCKS5 proxy.
func (d *dialer) socks(ctx context.Context, h *hop, network, addr string) (net.Conn, error) {
	var auth *proxy.Auth
	if u := h.proxy.User; u != nil {
		pw, _ := u.Password()
		auth = &proxy.Auth{User: u.Username(), Password: pw}
	}
	fwd := forward(func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.plain.DialContext(ctx, network, address)
		if err != nil {
			return nil, &proxyDialError{err}
		}
		return c, nil
	})
	sd, err := proxy.SOCKS5("tcp", h.addr, auth, fwd)
	if err != nil {
		return nil, h.fail(ProxyConnect, 0, err)
	}
	if h.proxy.Scheme == "socks5" {
		// socks5:// hands the proxy an address resolved and judged here.
		host, port, _ := net.SplitHostPort(addr)
		n, _ := strconv.ParseUint(port, 10, 16)
		ip, err := d.o.judge(ctx, h.proxy, host, uint16(n))
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(ip, port)
	}
	c, err := sd.(proxy.ContextDialer).DialContext(ctx, network, addr)
	if err == nil {
		return c, nil
	}
	var pd *proxyDialError
	switch msg := err.Error(); {
	case errors.As(err, &pd):
		return nil, h.fail(ProxyConnect, 0, pd.err)
	case strings.Contains(msg, "authentication failed"), strings.Contains(msg, "no acceptable authentication methods"),
		strings.Contains(msg, "invalid username/password"):
		return nil, h.fail(ProxyAuth, 0, nil)
	case ctx.Err() != nil:
		return nil, err
	}
	return nil, h.fail(ProxyTarget, 0, err)
}

// forward adapts a function to proxy.ContextDialer.
type forward func(ctx context.Context, network, address string) (net.Conn, error)

func (f forward) Dial(network, address string) (net.Conn, error) {
	return f(context.Background(), network, address)
}

func (f forward) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return f(ctx, network, address)
}

// Dial opens a TCP connection to target's host and port over o's route,
// for clients that are not HTTP (a websocket, a reachability check): the
// target is judged as for a request, then dialled directly through the
// guard, through a SOCKS5 proxy, or through an HTTP proxy's CONNECT. It
// returns the hop's name with the connection or error.
func Dial(ctx context.Context, o Options, target *url.URL) (net.Conn, string, error) {
	o = o.withDefaults()
	d := newDialer(o)
	addr := net.JoinHostPort(target.Hostname(), strconv.Itoa(int(portOf(target))))
	p := o.Route.ProxyFor(target)
	if p == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		return c, RouteDirect, err
	}
	name := o.Route.Name()
	if _, err := o.judge(ctx, p, target.Hostname(), portOf(target)); err != nil {
		return nil, name, err
	}
	h := newHop(o.Route, p)
	if h.socks() {
		c, err := d.socks(ctx, h, "tcp", addr)
		return c, name, err
	}
	c, err := d.connect(ctx, h, addr)
	return c, name, err
}

// connect opens a tunnel to addr through the hop's HTTP proxy.
func (d *dialer) connect(ctx context.Context, h *hop, addr string) (net.Conn, error) {
	c, err := d.plain.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, h.fail(ProxyConnect, 0, err)
	}
	if h.proxy.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: h.proxy.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, h.fail(ProxyConnect, 0, err)
		}
		c = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(d.o.Timeout))
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if u := h.proxy.User; u != nil {
		pw, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, h.fail(ProxyConnect, 0, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, h.fail(ProxyConnect, 0, err)
	}
	resp.Body.Close()
	if err := onConnect(context.WithValue(ctx, hopKey{}, h), h.proxy, req, resp); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		c.Close()
		return nil, h.fail(ProxyTarget, 0, errors.New("the proxy sent data before the tunnel opened"))
	}
	return c, nil
}
