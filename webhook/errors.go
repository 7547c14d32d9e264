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

// With returns the same catalogued error (status and code) with a message
// of its own, for answers whose wording depends on the case.
func (e *Error) With(msg string) *Error {
	return &Error{Status: e.Status, Code: e.Code, Msg: msg}
}

// The error catalogue: every HTTP error this package answers is one of
// these, and its code is stable for clients to rely on. A handler may
// replace the message (With); never the status or the code.
var (
	ErrBadRequest   = &Error{http.StatusBadRequest, "bad_request", "bad request"}
	ErrBadJSON      = &Error{http.StatusBadRequest, "bad_json", "request body is not valid JSON"}
	ErrBadBody      = &Error{http.StatusBadRequest, "bad_body", "could not read the request body"}
	ErrBadID        = &Error{http.StatusBadRequest, "bad_id", "delivery id too long"}
	ErrUnauthorized = &Error{http.StatusUnauthorized, "unauthorized", "missing or wrong credentials"}
	ErrBadSignature = &Error{http.StatusUnauthorized, "bad_signature", "signature missing, wrong or stale"}
	ErrForbidden    = &Error{http.StatusForbidden, "forbidden", "forbidden"}
	ErrScope        = &Error{http.StatusForbidden, "scope", "outside the approved scope"}
	ErrNotLoopback  = &Error{http.StatusForbidden, "not_loopback", "the admin API answers loopback clients only"}
	ErrOrigin       = &Error{http.StatusForbidden, "origin", "browser requests are refused"}
	ErrNotFound     = &Error{http.StatusNotFound, "not_found", "not found"}
	ErrMethod       = &Error{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed"}
	ErrBodyTimeout  = &Error{http.StatusRequestTimeout, "body_timeout", "the request body did not arrive in time"}
	ErrConflict     = &Error{http.StatusConflict, "conflict", "conflict"}
	ErrTooLarge     = &Error{http.StatusRequestEntityTooLarge, "too_large", "request body too large"}
	ErrContentType  = &Error{http.StatusUnsupportedMediaType, "content_type", "send application/json"}
	ErrClientBusy   = &Error{http.StatusTooManyRequests, "client_busy", "too many requests from your address at once; retry shortly"}
	ErrInternal     = &Error{http.StatusInternalServerError, "internal", "internal error"}
	ErrUnavailable  = &Error{http.StatusServiceUnavailable, "unavailable", "temporarily unavailable; retry later"}
	ErrBusy         = &Error{http.StatusServiceUnavailable, "busy", "too many requests in flight; retry shortly"}
	ErrBodyBudget   = &Error{http.StatusServiceUnavailable, "body_budget", "too many request bodies waiting to be checked; retry shortly"}
)

// catalogue lists every entry above (tests check codes are unique).
var catalogue = []*Error{
	ErrBadRequest, ErrBadJSON, ErrBadBody, ErrBadID, ErrUnauthorized, ErrBadSignature,
	ErrForbidden, ErrScope, ErrNotLoopback, ErrOrigin, ErrNotFound, ErrMethod,
	ErrBodyTimeout, ErrConflict, ErrTooLarge, ErrContentType, ErrClientBusy,
	ErrInternal, ErrUnavailable, ErrBusy, ErrBodyBudget,
}

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
			he = ErrInternal
		}
	} else if he.Status >= 500 && !shed(he) {
		s.o.Log.Warn().Str("path", r.URL.Path).Str("code", he.Code).Msg("request failed")
	}
	if retryable(he) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, he)
}

// shed reports whether e refuses work for load (these come in floods and
// are counted, not logged one by one).
func shed(e *Error) bool {
	return e.Code == ErrBusy.Code || e.Code == ErrBodyBudget.Code || e.Code == ErrClientBusy.Code
}

// retryable reports whether e asks the client to come back (429, 503):
// such answers carry Retry-After.
func retryable(e *Error) bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests
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
