package email

import (
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"strconv"
	"strings"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
)

// SectionKey is the top-level config section holding the SMTP server
// every e-mail recipient is sent through, and its key in
// delivery.SinkDeps.Sections.
const SectionKey = "smtp"

// The tls modes of the smtp section.
const (
	TLSStartTLS = "starttls" // plain connection upgraded with STARTTLS; refused if the server does not offer it
	TLSImplicit = "tls"      // TLS from the first byte (submissions, port 465)
	TLSNone     = "none"     // no TLS: only to a loopback host (a local relay)
)

// SMTP is the top-level smtp section: the submission server, its
// account and the sender address. Password is a secret.
type SMTP struct {
	Host     string `yaml:"host"`
	Port     int    `yaml:"port"` // default: 587 for starttls, 465 for tls, 25 for none
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	From     string `yaml:"from"` // "herald@example.com" or "Herald <herald@example.com>"
	TLS      string `yaml:"tls"`  // starttls (default) | tls | none
}

// Mode is the section's tls mode with the default applied.
func (s *SMTP) Mode() string {
	if s.TLS == "" {
		return TLSStartTLS
	}
	return s.TLS
}

// port is the port the section names or its mode's default.
// Addr is the server's host:port, its port defaulted by Mode.
func (s *SMTP) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.port())) }

func (s *SMTP) port() int {
	if s.Port != 0 {
		return s.Port
	}
	switch s.Mode() {
	case TLSImplicit:
		return 465
	case TLSNone:
		return 25
	}
	return 587
}

// Check validates the smtp section, reporting through c at each key's
// line. The password is never quoted.
func (s *SMTP) Check(c section.Checker) {
	switch {
	case c.Unset("host"):
	case strings.TrimSpace(s.Host) == "":
		c.Errorf("", "host is required")
	case strings.HasPrefix(s.Host, "["):
		if ip, err := netip.ParseAddr(strings.TrimSuffix(s.Host[1:], "]")); err != nil || !ip.Is6() || !strings.HasSuffix(s.Host, "]") {
			c.Errorf("host", "must be a host name, an IPv4 address or an IPv6 address in brackets ([::1])")
		}
	case strings.Contains(s.Host, ":"):
		if _, err := netip.ParseAddr(s.Host); err == nil {
			c.Errorf("host", "write an IPv6 address in brackets ([::1]): the port is set apart")
		} else {
			c.Errorf("host", "must be a host name or an address, without scheme or port (port is its own key)")
		}
	case strings.ContainsAny(s.Host, " /@"):
		c.Errorf("host", "must be a host name or an address, without scheme or port (port is its own key)")
	}
	if !c.Bad("port") && (s.Port < 0 || s.Port > 65535) {
		c.Errorf("port", "must be a port number (1-65535); unset: 587 for starttls, 465 for tls, 25 for none")
	}
	switch s.TLS {
	case "", TLSStartTLS, TLSImplicit:
	case TLSNone:
		if s.Host != "" && !c.Unset("host") && !egress.IsLoopbackHost(s.Host) {
			c.Errorf("tls", "none is allowed only to a loopback host (localhost, 127.0.0.1, ::1): the password and the messages would cross the network in clear")
		}
	default:
		c.Errorf("tls", "must be starttls, tls or none, not %s", c.Quote("tls", s.TLS))
	}
	user := s.Username != "" || c.Unset("username")
	pass := s.Password != "" || c.Unset("password")
	if user != pass {
		c.Errorf("", "username and password go together: set both, or neither for a relay without login")
	}
	switch {
	case c.Unset("from"):
	case s.From == "":
		c.Errorf("", "from is required (the sender address, e.g. herald@example.com)")
	default:
		if _, err := senderDomain(s.From); err != nil {
			c.Errorf("from", "%v", err)
		}
	}
}

// senderDomain is the domain of the sender address from.
func senderDomain(from string) (string, error) {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return "", fmt.Errorf("must be an e-mail address such as herald@example.com or \"Herald <herald@example.com>\"")
	}
	_, domain, ok := strings.Cut(a.Address, "@")
	if !ok || domain == "" {
		return "", fmt.Errorf("must be an e-mail address with a domain")
	}
	return strings.ToLower(domain), nil
}

// Config is an e-mail recipient (recipients.<name>.email): the addresses
// one message goes to, through the top-level smtp section. The
// addresses are personal data: never printed.
type Config struct {
	To []string `yaml:"to"`
	// proxy: a route named here carries the SMTP connection (SPEC §17);
	// unset, the server is reached directly (not through the default
	// route, whose proxies are for the web).
	section.Route `yaml:",inline"`
}

var _ delivery.SinkConfig = (*Config)(nil)

// Kind implements delivery.SinkConfig.
func (*Config) Kind() delivery.AddressKind { return Kind }

// Check implements delivery.SinkConfig. Whether the smtp section is set
// is checked where the whole file is seen.
func (c *Config) Check(ck section.Checker) {
	if len(c.To) == 0 && !ck.Bad("to") {
		ck.Errorf("", "to is required: the list of addresses to send to")
	}
	if len(c.To) > MaxRecipients {
		ck.Errorf("to", "lists %d addresses; at most %d", len(c.To), MaxRecipients)
	}
	for i, to := range c.To {
		key := fmt.Sprintf("to[%d]", i)
		if ck.Unset(key) {
			continue
		}
		if a, err := mail.ParseAddress(to); err != nil || !strings.Contains(a.Address, "@") {
			ck.Errorf(key, "is not an e-mail address")
		}
	}
}

// NewSink implements delivery.SinkConfig: the server comes from the
// top-level smtp section, handed over in deps.Sections.
func (c *Config) NewSink(deps delivery.SinkDeps) (delivery.Sink, error) {
	srv, _ := deps.Sections[SectionKey].(*SMTP)
	if srv == nil {
		return nil, fmt.Errorf("an email recipient needs the top-level %s section", SectionKey)
	}
	var opts []Option
	if c.Proxy != "" && deps.Egress.Route != nil {
		opts = append(opts, WithRoute(deps.Egress.Route))
	}
	return New(*srv, c.To, opts...)
}

// Secrets implements delivery.SinkConfig: the addresses, which are
// personal data and must stay out of logs and errors like a secret.
func (c *Config) Secrets() []string { return c.To }
