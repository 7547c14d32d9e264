// Package email is the delivery sink for e-mail: one multipart message
// (plain text and HTML) per push, submitted over SMTP to the server of
// the top-level smtp section, with a Message-ID derived from the effect
// key so every attempt of one push carries the same id.
//
// Outcomes follow the SMTP reply classes: a 4xx reply before the
// message was accepted is transient (retry), a 5xx is failed, and a
// connection lost after the final dot of the data is unknown, because
// the server may have accepted the message (RFC 1047) and SMTP has no
// key to drop a second copy.
package email

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/render"
)

// Kind names the sink in metrics, logs and redacted addresses.
const Kind delivery.AddressKind = "email"

// MaxRecipients is the most addresses one e-mail recipient may list:
// one SMTP transaction carries them all (RFC 5321 asks servers to take
// at least 100).
const MaxRecipients = 100

// DefaultTimeout bounds one attempt, from dial to the reply to the data.
const DefaultTimeout = 30 * time.Second

// TransientWait is how long the dispatcher waits after a 4xx reply.
const TransientWait = time.Minute

// Sink sends deliveries to a fixed list of addresses.
type Sink struct {
	srv     SMTP
	to      []string
	domain  string // the sender's domain, for Message-IDs
	timeout time.Duration
	roots   *x509.CertPool // nil: the system's
	now     func() time.Time
	route   *egress.Route // nil: direct
}

var _ delivery.Sink = (*Sink)(nil)

// Option adjusts a Sink.
type Option func(*Sink)

// WithTimeout bounds one attempt (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(s *Sink) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// WithClock sets the clock dates and relative due times are rendered
// against.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithRootCAs trusts roots instead of the system's certificates, for a
// server with a private certificate authority.
func WithRootCAs(roots *x509.CertPool) Option { return func(s *Sink) { s.roots = roots } }

// WithRoute reaches the server through route's proxy (SPEC §17). The
// server is the admin's: the guard does not judge it.
func WithRoute(r *egress.Route) Option { return func(s *Sink) { s.route = r } }

// New returns a sink sending through srv to the addresses to. Its errors
// never quote an address or the password.
func New(srv SMTP, to []string, opts ...Option) (*Sink, error) {
	if srv.Host == "" {
		return nil, errors.New("smtp: host is required")
	}
	if srv.Mode() == TLSNone && !egress.IsLoopbackHost(srv.Host) {
		return nil, errors.New("smtp: tls none is allowed only to a loopback host")
	}
	domain, err := senderDomain(srv.From)
	if err != nil {
		return nil, fmt.Errorf("smtp: from %v", err)
	}
	if len(to) == 0 {
		return nil, errors.New("email: no address to send to")
	}
	s := &Sink{srv: srv, to: append([]string(nil), to...), domain: domain, timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if _, err := s.message(delivery.Delivery{Key: "check"}); err != nil {
		return nil, errors.New("email: an address in to is not valid")
	}
	return s, nil
}

// MessageID is the Message-ID (without angle brackets) of the push with
// effect key key: the same for every attempt, so a reader or a server
// that sees two copies can tell they are one.
func (s *Sink) MessageID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:32] + "@herald." + s.domain
}

// Subject is the subject line of d's message: its headline on one line.
func Subject(d delivery.Delivery, now time.Time) string {
	return strings.Join(strings.Fields(render.Title(d.Message, d.Lang, now)), " ")
}

// Bodies renders d's message as the plain text and HTML alternatives.
// The HTML is escaped text with the links as anchors: a title that looks
// like markup stays text.
func Bodies(d delivery.Delivery, now time.Time) (text, html string) {
	text = render.Text(d.Message, d.Lang, d.Zone, now)
	parts := render.TelegramHTML(d.Message, d.Lang, d.Zone, now)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n")
	for i, p := range parts {
		if i > 0 {
			b.WriteString("<br>\n")
		}
		b.WriteString(strings.ReplaceAll(p, "\n", "<br>\n"))
	}
	b.WriteString("\n</body></html>\n")
	return text, b.String()
}

func (s *Sink) message(d delivery.Delivery) (*mail.Msg, error) {
	now := s.now()
	m := mail.NewMsg(mail.WithCharset(mail.CharsetUTF8))
	if err := m.From(s.srv.From); err != nil {
		return nil, err
	}
	if err := m.To(s.to...); err != nil {
		return nil, err
	}
	m.Subject(Subject(d, now))
	m.SetMessageIDWithValue(s.MessageID(d.Key))
	m.SetDateWithValue(now)
	m.SetGenHeader(mail.Header("Auto-Submitted"), "auto-generated")
	m.SetUserAgent(egress.DefaultUserAgent())
	text, html := Bodies(d, now)
	m.SetBodyString(mail.TypeTextPlain, text)
	m.AddAlternativeString(mail.TypeTextHTML, html)
	return m, nil
}

func (s *Sink) client(timeout time.Duration) (*mail.Client, error) {
	tlsConf := &tls.Config{ServerName: strings.Trim(s.srv.Host, "[]"), MinVersion: tls.VersionTLS12, RootCAs: s.roots}
	opts := []mail.Option{
		mail.WithPort(s.srv.port()),
		mail.WithTimeout(timeout),
		mail.WithTLSConfig(tlsConf),
	}
	// Through a route, implicit TLS is the route dial's own handshake: the
	// mail client then sees a TLS connection it did not open, so TLS is
	// not asked of it again and the login mechanisms are named.
	routedTLS := s.route != nil && s.srv.Mode() == TLSImplicit
	if s.route != nil {
		opts = append(opts, mail.WithDialContextFunc(s.dialRoute(tlsConf)))
	}
	switch {
	case routedTLS, s.srv.Mode() == TLSNone:
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	case s.srv.Mode() == TLSImplicit:
		opts = append(opts, mail.WithSSL())
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if s.srv.Username != "" {
		auth := mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover)
		switch {
		case routedTLS:
			auth = mail.WithOpportunisticSMTPAuth(mail.SMTPAuthSCRAMSHA256, mail.SMTPAuthSCRAMSHA1, mail.SMTPAuthCramMD5, mail.SMTPAuthPlain, mail.SMTPAuthLogin)
		case s.srv.Mode() == TLSNone:
			auth = mail.WithSMTPAuth(mail.SMTPAuthPlainNoEnc) // a loopback relay: nothing crosses the network
		}
		opts = append(opts, auth, mail.WithUsername(s.srv.Username), mail.WithPassword(s.srv.Password))
	}
	return mail.NewClient(s.srv.Host, opts...) // an IPv6 address keeps its brackets: go-mail appends ":port"
}

// dialRoute opens the connection through the sink's route, with the TLS
// handshake itself for implicit TLS (a dial function of its own replaces
// the mail client's TLS dialer).
func (s *Sink) dialRoute(tlsConf *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	o := egress.Options{Route: s.route, AnyAddress: true}
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, _, err := egress.Dial(ctx, o, &url.URL{Scheme: "smtp", Host: addr})
		if err != nil || s.srv.Mode() != TLSImplicit {
			return c, err
		}
		tc := tls.Client(c, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
}

// Send submits d's message in one SMTP transaction to all addresses.
func (s *Sink) Send(ctx context.Context, d delivery.Delivery) delivery.Outcome {
	if err := ctx.Err(); err != nil {
		return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: delivery.ReasonCanceled}
	}
	m, err := s.message(d)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "render"}
	}
	timeout := s.timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(dl), time.Millisecond))
	}
	c, err := s.client(timeout)
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: "smtp_config", Unreachable: true}
	}
	conn, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return sessionOutcome(err)
	}
	defer func() { _ = c.CloseWithSMTPClient(conn) }()
	if ctx.Err() != nil { // stopping: nothing has been submitted yet
		return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: delivery.ReasonCanceled}
	}
	return sendOutcome(c.SendWithSMTPClient(conn, m), m)
}

// sessionOutcome classifies a failure to open the session (connect,
// greeting, STARTTLS, login): no message was sent. A 5xx reply or a
// server that cannot serve this configuration (no STARTTLS, no login
// mechanism, an untrusted certificate) fails and marks the recipient
// unreachable until the configuration changes; anything else is
// retried. The reason never carries the server's text, which may quote
// an address.
func sessionOutcome(err error) delivery.Outcome {
	var te *textproto.Error
	var cert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	msg := err.Error()
	switch {
	case errors.As(err, &te) && te.Code >= 500:
		reason := fmt.Sprintf("smtp_%d_session", te.Code)
		if strings.Contains(msg, "SMTP AUTH failed") || authCode(te.Code) {
			reason = fmt.Sprintf("smtp_%d_auth", te.Code)
		}
		return delivery.Outcome{Result: delivery.Failed, Reason: reason, Unreachable: true}
	case errors.As(err, &te) && te.Code >= 400:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TransientWait, Reason: fmt.Sprintf("smtp_%d_session", te.Code)}
	case errors.As(err, &cert), errors.As(err, &unknownCA), errors.As(err, &hostname):
		return delivery.Outcome{Result: delivery.Failed, Reason: "smtp_tls_certificate", Unreachable: true}
	case strings.Contains(msg, "does not support STARTTLS"):
		return delivery.Outcome{Result: delivery.Failed, Reason: "smtp_no_starttls", Unreachable: true}
	case errors.Is(err, mail.ErrNoSupportedAuthDiscovered), strings.Contains(msg, "does not support SMTP AUTH"):
		// go-mail's words for a server without AUTH or without the
		// mechanism asked for (ErrPlainAuthNotSupported and its kin).
		return delivery.Outcome{Result: delivery.Failed, Reason: "smtp_auth_unsupported", Unreachable: true}
	}
	o := delivery.ClassifyTransport(err)
	// Nothing was submitted before the session was open, whatever the
	// transport error says.
	if o.Result != delivery.RetryAfter {
		o = delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: o.Reason}
	}
	return o
}

// authCode reports whether code is one RFC 4954 gives to a refused login.
func authCode(code int) bool { return code == 530 || code == 534 || code == 535 || code == 538 }

// sendOutcome classifies the transaction's result. go-mail says at which
// command it failed (SendError.Reason) and the reply's code: everything
// before the final dot of the data was refused or lost with nothing
// accepted; at the final dot, a reply refuses, and no reply is unknown.
func sendOutcome(err error, m *mail.Msg) delivery.Outcome {
	done := delivery.Outcome{Result: delivery.Completed, ProviderID: strings.Trim(m.GetMessageID(), "<>")}
	if err == nil {
		return done
	}
	var se *mail.SendError
	if !errors.As(err, &se) {
		return delivery.Outcome{Result: delivery.Unknown, Reason: "smtp_send"}
	}
	code := se.ErrorCode()
	stage := "session"
	switch se.Reason {
	case mail.ErrSMTPReset:
		if m.IsDelivered() { // the data was accepted; only the reset after it failed
			return done
		}
		return delivery.Outcome{Result: delivery.Unknown, Reason: "smtp_reset"}
	case mail.ErrGetSender, mail.ErrGetRcpts, mail.ErrNoUnencoded:
		return delivery.Outcome{Result: delivery.Failed, Reason: "smtp_message"}
	case mail.ErrSMTPDataClose:
		if code == 0 {
			// The final dot may have reached the server, which may have
			// accepted the message before the connection went.
			return delivery.Outcome{Result: delivery.Unknown, Reason: "smtp_lost_after_data"}
		}
		stage = "data"
	case mail.ErrSMTPMailFrom:
		stage = "mail"
	case mail.ErrSMTPRcptTo:
		stage = "rcpt"
	case mail.ErrSMTPData, mail.ErrWriteContent:
		stage = "data"
	}
	switch {
	case code >= 500:
		// A refused sender or address will be refused again: the
		// recipient cannot be reached as configured.
		return delivery.Outcome{Result: delivery.Failed, Reason: fmt.Sprintf("smtp_%d_%s", code, stage),
			Unreachable: stage == "mail" || stage == "rcpt"}
	case code >= 400:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TransientWait, Reason: fmt.Sprintf("smtp_%d_%s", code, stage)}
	}
	// No reply before the final dot: the connection went with nothing
	// accepted (RFC 5321 4.1.1.5 treats it as a 451).
	return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: "smtp_lost_" + stage}
}
