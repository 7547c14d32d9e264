package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestGuardJudgesWhatANameResolvesTo: a public-looking name is refused
// for the addresses it resolves to, whatever record carries them.
func TestGuardJudgesWhatANameResolvesTo(t *testing.T) {
	dns := newFakeDNS(t, map[string][]string{
		"hooks.herald.test":       {"10.0.0.5"},
		"metadata.herald.test":    {"169.254.169.254"},
		"loopback6.herald.test":   {"::1"},
		"mapped.herald.test":      {"::ffff:10.0.0.5"},
		"mapped-lo.herald.test":   {"::ffff:127.0.0.1"},
		"all-private.herald.test": {"10.0.0.5", "192.168.1.1", "fd00::5"},
	})
	for _, name := range []string{
		"hooks.herald.test", "metadata.herald.test", "loopback6.herald.test",
		"mapped.herald.test", "mapped-lo.herald.test", "all-private.herald.test",
	} {
		t.Run(name, func(t *testing.T) {
			for _, scheme := range []string{"https", "http"} {
				_, err := Client(Options{Resolver: dns.resolver()}).Get(scheme + "://" + name + "/latest/meta-data/")
				if !errors.Is(err, ErrBlocked) {
					t.Fatalf("%s: err=%v, want ErrBlocked", scheme, err)
				}
				if !NotSent(err) {
					t.Fatalf("%s: refused request not classified NotSent: %v", scheme, err)
				}
			}
			if dns.questions(name) == 0 {
				t.Fatal("the name never reached the resolver")
			}
			// CheckURL cannot judge a name; the dial does.
			if err := CheckURL("https://"+name+"/", false); err != nil {
				t.Fatalf("CheckURL = %v", err)
			}
		})
	}
}

// TestNameResolvingToTrustedDestinationIsDialled is the positive control:
// the same resolver path reaches a server when the guard allows it.
func TestNameResolvingToTrustedDestinationIsDialled(t *testing.T) {
	srv := newOK(t)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	dns := newFakeDNS(t, map[string][]string{"service.herald.test": {ap.Addr().String()}})
	u := "http://service.herald.test:" + strconv.Itoa(int(ap.Port())) + "/"
	resp, err := Client(Options{Resolver: dns.resolver(), Trusted: []netip.AddrPort{ap}}).Get(u)
	if err != nil {
		t.Fatalf("trusted destination by name: %v", err)
	}
	resp.Body.Close()
	if _, err := Client(Options{Resolver: dns.resolver()}).Get(u); !errors.Is(err, ErrBlocked) {
		t.Fatalf("untrusted loopback by name: err=%v, want ErrBlocked", err)
	}
}

var errStopDial = errors.New("test: stop before connecting")

// TestMixedAnswersReachOnlyThePublicAddress: for a name with a public and
// a private A record, the dialer offers both to the guard, in either
// order, and only the public one passes. The control stops every allowed
// attempt before its connect, so the test needs no route to the internet.
func TestMixedAnswersReachOnlyThePublicAddress(t *testing.T) {
	const public, private = "93.184.215.14", "10.0.0.5"
	dns := newFakeDNS(t, map[string][]string{
		"private-first.herald.test": {private, public},
		"public-first.herald.test":  {public, private},
	})
	for _, name := range []string{"private-first.herald.test", "public-first.herald.test"} {
		t.Run(name, func(t *testing.T) {
			var offered, passed []string
			guard := Guard(false)
			d := &net.Dialer{
				Resolver: dns.resolver(),
				Control: func(network, address string, c syscall.RawConn) error {
					offered = append(offered, address)
					if err := guard(network, address, c); err != nil {
						return err
					}
					passed = append(passed, address)
					return errStopDial
				},
			}
			_, err := d.DialContext(context.Background(), "tcp4", net.JoinHostPort(name, "443"))
			if err == nil {
				t.Fatal("dial succeeded")
			}
			if len(offered) != 2 {
				t.Fatalf("addresses offered to the guard: %v, want both answers", offered)
			}
			if fmt.Sprint(passed) != fmt.Sprint([]string{public + ":443"}) {
				t.Fatalf("addresses the guard let through: %v, want only the public one", passed)
			}
		})
	}
}

// TestMixedAnswersNeverConnectToThePrivateAddress runs the same case end
// to end through Client: a name resolves to an internal server (refused)
// and to a trusted server standing in for a public address. Every request
// reaches the stand-in and the internal server sees no connection at all.
func TestMixedAnswersNeverConnectToThePrivateAddress(t *testing.T) {
	internal, standIn := twoLoopbackServers(t)
	dns := newFakeDNS(t, map[string][]string{
		"internal-first.herald.test": {internal.addr.Addr().String(), standIn.addr.Addr().String()},
		"public-first.herald.test":   {standIn.addr.Addr().String(), internal.addr.Addr().String()},
	})
	c := Client(Options{Resolver: dns.resolver(), Trusted: []netip.AddrPort{standIn.addr}})
	port := strconv.Itoa(int(standIn.addr.Port()))
	for _, name := range []string{"internal-first.herald.test", "public-first.herald.test"} {
		for range 3 {
			resp, err := c.Get("http://" + name + ":" + port + "/")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "stand-in" {
				t.Fatalf("%s: answered by %q", name, body)
			}
			c.CloseIdleConnections() // every request dials anew
		}
	}
	if n := internal.conns.Load(); n != 0 {
		t.Fatalf("the internal server saw %d connections", n)
	}
	if standIn.conns.Load() == 0 {
		t.Fatal("the stand-in saw no connection")
	}
}

type countedServer struct {
	addr  netip.AddrPort
	conns atomic.Int64
}

// twoLoopbackServers starts servers on 127.0.0.1 and 127.0.0.2 with the
// same port, answering "internal" and "stand-in".
func twoLoopbackServers(t *testing.T) (internal, standIn *countedServer) {
	t.Helper()
	for range 20 {
		l2, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Skipf("127.0.0.2 not available: %v", err)
		}
		port := l2.Addr().(*net.TCPAddr).Port
		l1, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			l2.Close()
			continue // the port is taken on 127.0.0.1; try another
		}
		internal, standIn = serveCounted(t, l1, "internal"), serveCounted(t, l2, "stand-in")
		return internal, standIn
	}
	t.Skip("no port free on both 127.0.0.1 and 127.0.0.2")
	return nil, nil
}

func serveCounted(t *testing.T, l net.Listener, body string) *countedServer {
	s := &countedServer{addr: netip.MustParseAddrPort(l.Addr().String())}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

// TestRedirectToPrivateNameRefused: a trusted server redirects to a name
// that resolves to a private address. Client hands the 3xx back; following
// it (as the source fetcher does, hop by hop) is refused at dial time, and
// so is a client built on Transport that follows redirects itself.
func TestRedirectToPrivateNameRefused(t *testing.T) {
	dns := newFakeDNS(t, map[string][]string{
		"metadata.herald.test": {"169.254.169.254"},
		"internal.herald.test": {"::ffff:10.0.0.5"},
	})
	for _, target := range []string{"http://metadata.herald.test/latest/meta-data/", "https://internal.herald.test/admin"} {
		t.Run(target, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			}))
			t.Cleanup(srv.Close)
			o := Options{Resolver: dns.resolver(), Trusted: []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}}

			c := Client(o)
			resp, err := c.Get(srv.URL + "/go")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusFound || loc != target {
				t.Fatalf("got %d %q, want the 302 itself", resp.StatusCode, loc)
			}
			if _, err := c.Get(loc); !errors.Is(err, ErrBlocked) {
				t.Fatalf("following the redirect by hand: err=%v, want ErrBlocked", err)
			}

			following := &http.Client{Transport: Transport(o)}
			if _, err := following.Get(srv.URL + "/go"); !errors.Is(err, ErrBlocked) || !NotSent(err) {
				t.Fatalf("redirect followed by the client: err=%v, want ErrBlocked", err)
			}
		})
	}
}
