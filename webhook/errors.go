package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
)

// HandlerFunc is an HTTP handler that returns its error; one place (wrap)
// maps errors to status, JSON body and log level.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Error is an HTTP error with a stable code from the catalogue below.
type Error struct {
	Status int
	Code   string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// The error catalogue: stable codes clients may rely on.
var (
	ErrNotFound     = &Error{http.StatusNotFound, "not_found", "not found"}
	ErrMethod       = &Error{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed"}
	ErrTooLarge     = &Error{http.StatusRequestEntityTooLarge, "too_large", "request body too large"}
	ErrBadJSON      = &Error{http.StatusBadRequest, "bad_json", "request body is not valid JSON"}
	ErrUnauthorized = &Error{http.StatusUnauthorized, "unauthorized", "missing or wrong credentials"}
	ErrBadSignature = &Error{http.StatusUnauthorized, "bad_signature", "signature missing, wrong or stale"}
	ErrUnavailable  = &Error{http.StatusServiceUnavailable, "unavailable", "temporarily unavailable; retry later"}
)

func (s *Server) wrap(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.handleError(w, r, err)
		}
	})
}

func (s *Server) handleError(w http.ResponseWriter, r *http.Request, err error) {
	var he *Error
	if !errors.As(err, &he) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			he = ErrTooLarge
		} else {
			s.o.Log.Error().Str("path", r.URL.Path).Err(err).Msg("request failed")
			he = &Error{Status: http.StatusInternalServerError, Code: "internal", Msg: "internal error"}
		}
	} else if he.Status >= 500 {
		s.o.Log.Warn().Str("path", r.URL.Path).Str("code", he.Code).Msg("request failed")
	}
	if he.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, he)
}

func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": map[string]string{"code": e.Code, "message": e.Msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}
