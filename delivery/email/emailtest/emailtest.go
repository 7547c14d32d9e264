// Package emailtest is a real SMTP server on loopback for tests of the
// e-mail sink: it records what it is sent and answers each stage as the
// test chooses, including a connection dropped after the final dot.
package emailtest

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the server read to its final dot.
type Message struct {
	From string
	To   []string
	Data []byte
}

// Server is an SMTP server on 127.0.0.1.
type Server struct {
	Host string // 127.0.0.1
	Port int

	mu       sync.Mutex
	password string // "" accepts any login
	msgs     []Message
	mailErr  error
	rcptErr  error
	dataErr  error
	drop     bool
	logins   int
}

// Option configures a Server.
type Option func(*smtp.Server, *net.Listener, *Server)

// WithTLS offers STARTTLS with cfg, or speaks TLS from the first byte if
// implicit.
func WithTLS(cfg *tls.Config, implicit bool) Option {
	return func(s *smtp.Server, ln *net.Listener, _ *Server) {
		s.TLSConfig = cfg
		if implicit {
			*ln = tls.NewListener(*ln, cfg)
		}
	}
}

// WithPassword refuses a login with any other password (535).
func WithPassword(pw string) Option {
	return func(_ *smtp.Server, _ *net.Listener, s *Server) { s.password = pw }
}

// New starts a server, stopped at the test's end.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Host = "127.0.0.1"
	s.Port = ln.Addr().(*net.TCPAddr).Port
	for _, o := range opts {
		o(srv, &ln, s)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// FailMail answers MAIL FROM with err (nil: accept).
func (s *Server) FailMail(err error) { s.set(func() { s.mailErr = err }) }

// FailRcpt answers every RCPT TO with err (nil: accept).
func (s *Server) FailRcpt(err error) { s.set(func() { s.rcptErr = err }) }

// FailData answers the final dot with err (nil: accept).
func (s *Server) FailData(err error) { s.set(func() { s.dataErr = err }) }

// DropAfterData closes the connection once the message is read to its
// final dot, before any reply.
func (s *Server) DropAfterData(drop bool) { s.set(func() { s.drop = drop }) }

func (s *Server) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// Messages are the messages read so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Logins is how many logins were tried.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Error is an SMTP reply with an enhanced status code.
func Error(code int, enhanced [3]int, text string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode(enhanced), Message: text}
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) { return &session{s: b.s, c: c}, nil }

type session struct {
	s    *Server
	c    *smtp.Conn
	from string
	to   []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, _, pass string) error {
		x.s.mu.Lock()
		defer x.s.mu.Unlock()
		x.s.logins++
		if x.s.password != "" && pass != x.s.password {
			return smtp.ErrAuthFailed
		}
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.from = from
	return x.s.mailErr
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.rcptErr != nil {
		return x.s.rcptErr
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	x.s.msgs = append(x.s.msgs, Message{From: x.from, To: x.to, Data: b})
	drop, dataErr := x.s.drop, x.s.dataErr
	x.s.mu.Unlock()
	if drop {
		_ = x.c.Conn().Close() // the data is in; the reply never leaves
		return nil
	}
	return dataErr
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
