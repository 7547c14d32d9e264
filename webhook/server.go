// Package webhook owns herald's one HTTP listener: the router, the
// protections every route shares (body limits, timeouts, a concurrency
// cap, access logs, panic recovery), the bounds of the inbound routes (per
// client address, and a memory budget for bodies not yet authenticated),
// inbound hooks, the inbox API and the admin API. Channels mount their
// handlers on it; nothing else listens.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Options configure the Server.
type Options struct {
	Addr     string
	CertFile string
	KeyFile  string
	// MaxInFlight is how many requests all routes together serve at once
	// before 503 + Retry-After (default 512); probes are always answered.
	MaxInFlight int
	// Inbound bounds the routes the open internet reaches (hooks, chat
	// platform webhooks) within MaxInFlight.
	Inbound InboundLimits
	// OtherPerClient is how many requests to every other route one client
	// address may have open at once before 429 (default 64); probes are
	// always answered.
	OtherPerClient int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client; empty: the TCP peer is the client.
	TrustedProxies Proxies
	Log            zerolog.Logger
}

// Server is the HTTP listener.
type Server struct {
	o        Options
	mux      *http.ServeMux
	srv      *http.Server
	inflight atomic.Int64
	gate     *gate        // the inbound routes
	others   *clientSlots // every other route, per client
	xffNoted atomic.Bool  // the untrusted X-Forwarded-For warning was logged
	ln       net.Listener
}

// New returns a Server with no routes.
func New(o Options) *Server {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 512
	}
	o.Inbound.defaults(o.MaxInFlight)
	if o.OtherPerClient <= 0 {
		o.OtherPerClient = DefaultOtherPerClient
	}
	s := &Server{o: o, mux: http.NewServeMux(), gate: newGate(o.Inbound), others: newClientSlots(o.OtherPerClient)}
	s.srv = &http.Server{
		Handler:           s.protect(s.mux),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	return s
}

// Handle mounts an error-returning handler.
func (s *Server) Handle(pattern string, h HandlerFunc) { s.mux.Handle(pattern, s.wrap(h)) }

// HandleHTTP mounts a plain http.Handler (channel libraries hand these back).
func (s *Server) HandleHTTP(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Listen binds the address; Addr then reports the bound address.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.o.Addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address (after Listen).
func (s *Server) Addr() string {
	if s.ln == nil {
		return s.o.Addr
	}
	return s.ln.Addr().String()
}

// TLS reports whether the server terminates TLS itself.
func (s *Server) TLS() bool { return s.o.CertFile != "" }

// Serve serves until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish within drain, and returns.
func (s *Server) Serve(ctx context.Context, drain time.Duration) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() {
		var err error
		if s.o.CertFile != "" {
			s.srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			err = s.srv.ServeTLS(s.ln, s.o.CertFile, s.o.KeyFile)
		} else {
			err = s.srv.Serve(s.ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
	}
	return <-errc
}

// protect applies the shared protections: a deadline for request
// bodies, the concurrency cap, a share per client address, the inbound
// routes' bounds, panic recovery, access log.
func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		inbound := inboundPath(r.URL.Path)
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			// A copy: the server's own request keeps its body, which it
			// inspects after the handler to close the connection gently.
			r = r.WithContext(r.Context())
			rw.body = s.watchBody(w, r, start, inbound)
		}
		if n := s.inflight.Add(1); n > int64(s.o.MaxInFlight) && !probe(r) {
			s.inflight.Add(-1)
			if inbound {
				s.gate.refusedBusy.Add(1)
				s.gate.shed()
			}
			refuse(rw, ErrBusy)
			s.access(r, rw, start)
			return
		}
		defer s.inflight.Add(-1)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.o.Log.Error().Str("path", r.URL.Path).Str("panic", fmt.Sprint(p)).Msg("handler panicked")
				if !rw.wrote {
					writeError(rw, ErrInternal)
				}
			}
			s.access(r, rw, start)
		}()
		client := s.o.TrustedProxies.Client(r)
		if len(s.o.TrustedProxies) == 0 && inbound && r.Header.Get("X-Forwarded-For") != "" && !s.xffNoted.Swap(true) {
			// Once: behind a proxy nobody named, every client is the proxy.
			s.o.Log.Warn().Str("peer", client.String()).Msg("requests come through a proxy (X-Forwarded-For) but server.trusted_proxies is empty: every client counts as that proxy")
		}
		switch {
		case inbound:
			s.inbound(rw, r, client, next)
			return
		case !probe(r):
			if !s.others.take(client) {
				refuse(rw, ErrClientBusy)
				return
			}
			defer s.others.give(client)
		}
		next.ServeHTTP(rw, r)
	})
}

// watchBody gives r's body a deadline (the inbound one on inbound
// routes, 10 s elsewhere) and watches it: once it has been read to its
// end the connection's deadline is the server's again, so a long
// handler keeps its context; an answer written before that closes the
// connection instead of waiting for the rest.
func (s *Server) watchBody(w http.ResponseWriter, r *http.Request, start time.Time, inbound bool) *requestBody {
	timeout := otherBodyTimeout
	if inbound {
		timeout = s.o.Inbound.BodyTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(start.Add(timeout))
	body := &requestBody{ReadCloser: r.Body, http1: r.ProtoMajor == 1, onEOF: func() {
		if s.srv.ReadTimeout > 0 {
			_ = rc.SetReadDeadline(start.Add(s.srv.ReadTimeout))
		} else {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}}
	r.Body = body
	return body
}

// inbound serves a request on an inbound route within its bounds: a slot
// for its client address and in all, and its body counted against the
// budget until authenticated. What can be refused on the headers alone is
// refused before a byte of the body is read.
func (s *Server) inbound(rw *statusWriter, r *http.Request, client netip.Addr, next http.Handler) {
	if err := s.gate.enter(client); err != nil {
		refuse(rw, err)
		return
	}
	defer s.gate.leave(client)
	if r.ContentLength > MaxInboundBody {
		refuse(rw, ErrTooLarge)
		return
	}
	if body := rw.body; body != nil {
		body.count(s.gate, r.ContentLength)
		defer body.authenticated()
		// The hooks check their headers first and count the body only
		// when they read it; a chat platform's handler reads at once, so
		// its body is counted now and refused here, where the answer is
		// still ours.
		if !isHook(r.URL.Path) && !body.take() {
			refuse(rw, ErrBodyBudget)
			return
		}
	}
	next.ServeHTTP(rw, r)
}

func isHook(path string) bool { return strings.HasPrefix(path, hooksPrefix) }

// refuse answers e before the handler runs.
func refuse(w http.ResponseWriter, e *Error) {
	if retryable(e) {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, e)
}

// Inbound reports the inbound routes' load (for /readyz and metrics).
func (s *Server) Inbound() InboundStats { return s.gate.stats() }

// probe reports whether r is a liveness or readiness probe: cheap, and
// answered even at the concurrency cap, so an overloaded server is not
// mistaken for a dead one.
func probe(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

func (s *Server) access(r *http.Request, rw *statusWriter, start time.Time) {
	ev := s.o.Log.Debug()
	if rw.status >= 500 && rw.status != http.StatusServiceUnavailable { // 503s come in floods under load: debug
		ev = s.o.Log.Warn()
	}
	// The path only: queries may carry tokens (I10).
	ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", rw.status).
		Int64("bytes", rw.bytes).Str("took", time.Since(start).Round(time.Microsecond).String()).Msg("http")
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
	body   *requestBody // nil: the request has no body
}

// drainGrace is how long, after an answer given before the body was
// read, the server still takes the rest of the body (at most 256 KiB),
// so a client that sends it at once reads the answer rather than a reset
// connection. The request's slots are free by then.
const drainGrace = 500 * time.Millisecond

// beforeHeader makes an answer given before the request body was read to
// its end close the connection, instead of the server waiting for the
// rest of a body that may come slowly on purpose.
func (w *statusWriter) beforeHeader() {
	if w.body == nil || w.body.eof {
		return
	}
	// HTTP/2 resets the stream of an unread body by itself; closing would
	// end the other streams' connection too.
	if w.body.http1 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(drainGrace))
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.beforeHeader()
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.beforeHeader()
		w.status, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
