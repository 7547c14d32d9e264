package tasks

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/tasks/source"
)

// lookupTimeout bounds the name lookup a request waits for.
const lookupTimeout = 3 * time.Second

// CheckSource answers, before anything is asked or stored, whether the
// policy's address guard would refuse rawURL's destination: the refusal
// Submit would return, or nil (also for a URL Submit refuses otherwise).
func (m *Manager) CheckSource(rawURL string) error {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Host == "" {
		return nil
	}
	return m.destination(u, m.Policy().AllowPrivate)
}

// destination refuses a request whose source the address guard would
// refuse at its first run (policy.allow_private_networks off: loopback,
// private and link-local addresses, ports other than 80 and 443; always:
// cloud metadata addresses), in the words that run would use. A literal
// address is judged as written; a name by what it resolves to, within
// lookupTimeout.
func (m *Manager) destination(u *url.URL, allowPrivate bool) error {
	resolve := m.o.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	err := source.Refusal(ctx, u, allowPrivate, resolve)
	var be *egress.BlockedError
	if err == nil || !errors.As(err, &be) {
		return nil
	}
	host := u.Hostname()
	switch be.Kind {
	case egress.KindPort:
		return userErr(ErrInvalid, "address_port", "port %d of %s is not allowed: sources use ports 80 and 443 unless policy.allow_private_networks is set", be.Port, host)
	case egress.KindMetadata:
		return userErr(ErrInvalid, "address_metadata", "%s is a cloud metadata address, which herald never fetches", host)
	}
	verb := Word{En: "resolves to", Key: "runerror.resolves_to"}
	if _, perr := netip.ParseAddr(host); perr == nil || host == "localhost" {
		verb = Word{En: "is", Key: "runerror.is"}
	}
	what, ok := addrWords[be.Kind]
	if !ok {
		what = addrWords[egress.KindNonPublic]
	}
	if verb.Key == "runerror.resolves_to" && what.Key == "runerror.not_public" {
		what.En = "an address that is not public"
	}
	return userErr(ErrInvalid, "address_not_public", "%s %v %v; set policy.allow_private_networks for local sources", host, verb, what)
}

// addrWords name each kind of refused address, as a run's error does.
var addrWords = map[string]Word{
	egress.KindLoopback:  {En: "a loopback address", Key: "runerror.loopback"},
	egress.KindPrivate:   {En: "a private network address", Key: "runerror.private"},
	egress.KindLinkLocal: {En: "a link-local address", Key: "runerror.link_local"},
	egress.KindNonPublic: {En: "not a public address", Key: "runerror.not_public"},
}
