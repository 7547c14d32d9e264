package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
)

// NotSent reports whether err proves that a request never left this host,
// so that retrying it cannot duplicate an effect (README, The promise: I3): the guard
// refused the address, DNS failed, the connection could not be opened
// (refused, unreachable, connect timeout), the TLS handshake failed, or
// the route's proxy failed before the tunnel to the target opened.
// Anything else — a reset or EOF after the request was written, a response
// timeout — may have been received and is not NotSent.
func NotSent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrBlocked) || errors.Is(err, ErrBadURL) || errors.Is(err, ErrProxy) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	if tlsHandshakeFailure(err) {
		return true
	}
	return false
}

func tlsHandshakeFailure(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &header), errors.As(err, &alert),
		errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return true
	}
	// net/http reports its own handshake deadline with an unexported type.
	return strings.Contains(err.Error(), "TLS handshake timeout")
}

// Redact drops the URL from a *url.Error returned by Client or Resty, and
// the resolved address from the dial error inside it: a webhook URL is a
// recipient address, the address it resolved to identifies the recipient
// as well, and a source URL may embed a token (I10). The cause stays
// reachable with errors.Is / errors.As.
func Redact(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	cause := ue.Err
	var op *net.OpError
	if errors.As(cause, &op) && (op.Addr != nil || op.Source != nil) {
		cause = &net.OpError{Op: op.Op, Net: op.Net, Err: op.Err}
	}
	return &url.Error{Op: ue.Op, URL: "[redacted]", Err: cause}
}

// IsTLSFailure reports whether err is a failed TLS handshake: an
// untrusted or mismatched certificate, an alert, a peer that does not
// speak TLS, or the handshake's deadline.
func IsTLSFailure(err error) bool { return tlsHandshakeFailure(err) }
