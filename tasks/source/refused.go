package source

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"

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
