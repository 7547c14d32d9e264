// Package section holds what a configuration section owned by another
// package needs from configs without importing it: the Duration type the
// loader decodes, and the Checker through which a section's own
// validation reports problems at the file:line of the value concerned.
// A sink package declares its recipient section with these (see
// delivery.SinkConfig); configs decodes and checks it like its own.
package section

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written as Go duration text ("72h", "30m")
// or whole days first ("3d").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Checker reports the problems of one section. Keys are relative to the
// section ("url", "secret"); "" is the section itself. Messages never
// carry a value that may be secret: quote values with Quote.
type Checker interface {
	// Errorf reports a problem at key's line.
	Errorf(key, format string, args ...any)
	// Unset reports, once, the unset ${VAR}s key's value named and says
	// whether there were any.
	Unset(key string) bool
	// Bad says key's value was rejected while decoding (already reported).
	Bad(key string) bool
	// Quote renders key's value for a message, or says it came from a
	// variable (which may hold a secret).
	Quote(key, s string) string
	// RequiredURL checks an outbound URL: present ("<key> is required" at
	// the section), https, plain http only for loopback hosts with
	// policy.allow_private_networks, and a destination the outbound guard
	// accepts (egress.CheckURL: no loopback, private or unspecified
	// address and no port but 80 and 443 without
	// policy.allow_private_networks). The URL itself is never printed.
	RequiredURL(key, raw string)
}

// WhsecProblem says what is wrong with a Standard Webhooks secret
// (whsec_ followed by base64 of 24 to 64 bytes), or "" when nothing is.
// The value is never part of the answer.
func WhsecProblem(s string) string {
	b, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return "must be whsec_ followed by base64"
	}
	key, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		return "must be whsec_ followed by base64 (it does not decode)"
	}
	if len(key) < 24 || len(key) > 64 {
		return fmt.Sprintf("must decode to 24-64 bytes, not %d", len(key))
	}
	return ""
}

// Route is the proxy key every outbound section takes (SPEC §17): a name
// from network.proxies, "direct", or "" for the default route. A sink's
// section embeds it with `yaml:",inline"`, so its key sits beside the
// section's own.
type Route struct {
	Proxy string `yaml:"proxy"`
}

// ProxyName is the route the section names.
func (r Route) ProxyName() string { return r.Proxy }
