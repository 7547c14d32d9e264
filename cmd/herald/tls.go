package main

import "crypto/tls"

// insecureLoopbackTLS is used only to reach the admin API on loopback when
// the service terminates TLS with a certificate made for its public name.
// The bearer token, not the certificate, authenticates the service here.
func insecureLoopbackTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // loopback only
}
