package delivery

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
)

// NotSentWait is how long a sink asks the dispatcher to wait after an
// attempt that provably never left this host (lookup or dial failed).
const NotSentWait = 5 * time.Second

// Reasons reported by ClassifyTransport.
const (
	ReasonDNS           = "dns"
	ReasonConnectFailed = "connect_failed"
	ReasonCanceled      = "canceled"
	ReasonTimeout       = "timeout"
	ReasonConnLost      = "connection_lost"
	// ReasonProxyAuth: the route's proxy refused herald's credentials.
	// Nothing was sent; the push waits for the config to be fixed.
	ReasonProxyAuth = "proxy_auth"
	// ReasonProxy: the route's proxy could not be reached or did not
	// open the tunnel. Nothing was sent.
	ReasonProxy = "proxy_connect"
)

// ProxyWait is how long a push waits after its proxy refused herald's
// credentials: long enough not to hammer a proxy that will keep refusing
// until the config is fixed and reloaded.
const ProxyWait = 5 * time.Minute

// proxyOutcome classifies a failure of the route's proxy, which always
// happens before the request reaches the target (SPEC §17).
func proxyOutcome(err error) (Outcome, bool) {
	pe, ok := egress.ProxyFailure(err)
	switch {
	case !ok:
		return Outcome{}, false
	case pe.Kind == egress.ProxyAuth:
		return Outcome{Result: RetryAfter, After: ProxyWait, Reason: ReasonProxyAuth}, true
	}
	return Outcome{Result: RetryAfter, After: NotSentWait, Reason: ReasonProxy}, true
}

// ClassifyTransport classifies an error from a failed round trip, below any
// API envelope (I3). A failed lookup, dial or TLS handshake sent nothing:
// RetryAfter NotSentWait. Anything later — cancellation, a timeout, a
// connection lost after the request was written — may have reached the
// peer: Unknown. Sinks check their own special cases (a guard refusal, a
// library's decode error) before calling it. The reason never carries the
// error text.
func ClassifyTransport(err error) Outcome {
	if o, ok := proxyOutcome(err); ok {
		return o
	}
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case errors.As(err, &dns):
		return Outcome{Result: RetryAfter, After: NotSentWait, Reason: ReasonDNS}
	case egress.NotSent(err):
		return Outcome{Result: RetryAfter, After: NotSentWait, Reason: ReasonConnectFailed}
	case errors.Is(err, context.Canceled):
		return Outcome{Result: Unknown, Reason: ReasonCanceled}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return Outcome{Result: Unknown, Reason: ReasonTimeout}
	}
	return Outcome{Result: Unknown, Reason: ReasonConnLost}
}
