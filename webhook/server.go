// Package webhook owns herald's one HTTP listener: the router, the
// protections every route shares (body limits, timeouts, a concurrency
// cap, access logs, panic recovery), inbound hooks, the inbox API and the
// admin API. Channels mount their handlers on it; nothing else listens.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Options configure the Server.
type Options struct {
	Addr        string
	CertFile    string
	KeyFile     string
	MaxInFlight int // requests served at once before 503 + Retry-After (default 512)
	Log         zerolog.Logger
}

// Server is the HTTP listener.
type Server struct {
	o        Options
	mux      *http.ServeMux
	srv      *http.Server
	inflight atomic.Int64
	ln       net.Listener
}

// New returns a Server with no routes.
func New(o Options) *Server {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 512
	}
	s := &Server{o: o, mux: http.NewServeMux()}
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

// protect applies the shared protections: concurrency cap, panic
// recovery, access log.
func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		if n := s.inflight.Add(1); n > int64(s.o.MaxInFlight) && !probe(r) {
			s.inflight.Add(-1)
			rw.Header().Set("Retry-After", "1")
			writeError(rw, &Error{Status: http.StatusServiceUnavailable, Code: "busy", Msg: "too many requests in flight; retry shortly"})
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
					writeError(rw, &Error{Status: http.StatusInternalServerError, Code: "internal", Msg: "internal error"})
				}
			}
			s.access(r, rw, start)
		}()
		next.ServeHTTP(rw, r)
	})
}

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
		Int64("bytes", rw.bytes).Dur("took", time.Since(start)).Msg("http")
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
