package source

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/herald-bridge/herald/delivery/egress"
)

// refusedError says in plain words why the guard refused a source's
// address and what setting allows it; it unwraps to the guard's error.
type refusedError struct {
	msg string
	err error
}

func (e *refusedError) Error() string { return e.msg }
func (e *refusedError) Unwrap() error { return e.err }

// addrWords names each kind of refused address.
var addrWords = map[string]string{
	egress.KindLoopback:  "a loopback address",
	egress.KindPrivate:   "a private network address",
	egress.KindLinkLocal: "a link-local address",
	egress.KindNonPublic: "not a public address",
}

// refused explains a refusal of u's destination: "127.0.0.1 is a loopback
// address; set policy.allow_private_networks for local sources". The
// source's own host is named (its owner typed it); the address a name
// resolved to is not.
func refused(u *url.URL, err error) error {
	host := u.Hostname()
	var be *egress.BlockedError
	if !errors.As(err, &be) {
		return &refusedError{msg: fmt.Sprintf("the address of %s is not allowed (%v)", host, err), err: err}
	}
	if be.Kind == egress.KindMetadata {
		return &refusedError{err: err, msg: fmt.Sprintf("%s is a cloud metadata address, which herald never fetches", host)}
	}
	if be.Kind == egress.KindPort {
		return &refusedError{err: err, msg: fmt.Sprintf(
			"port %d of %s is not allowed: sources use ports 80 and 443 unless policy.allow_private_networks is set", be.Port, host)}
	}
	verb := "resolves to"
	if _, perr := netip.ParseAddr(host); perr == nil || host == "localhost" {
		verb = "is"
	}
	what := addrWords[be.Kind]
	if what == "" {
		what = addrWords[egress.KindNonPublic]
	}
	if verb == "resolves to" && what == addrWords[egress.KindNonPublic] {
		what = "an address that is not public"
	}
	return &refusedError{err: err, msg: fmt.Sprintf("%s %s %s; set policy.allow_private_networks for local sources", host, verb, what)}
}

// Resolver answers the addresses of a name (net.Resolver.LookupNetIP's
// shape, network "ip").
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Refusal judges u's destination before any request is made, as the guard
// judges a run's: a literal address or localhost as written, without DNS;
// a name by the addresses resolve answers within ctx. It returns the
// refusal a run would report, in the same words, or nil. A lookup that
// fails or runs out of time is no refusal: the run reports it.
func Refusal(ctx context.Context, u *url.URL, allowPrivate bool, resolve Resolver) error {
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") {
			port = "80"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || host == "" {
		return nil // not a URL a run could fetch; build says so
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if egress.IsLoopbackHost(host) {
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	} else if resolve != nil {
		if addrs, err = resolve(ctx, host); err != nil {
			return nil
		}
	}
	guard := egress.Guard(allowPrivate)
	for _, a := range addrs {
		if err := guard("tcp", netip.AddrPortFrom(a, uint16(p)).String(), nil); err != nil {
			return refused(u, err)
		}
	}
	return nil
}
