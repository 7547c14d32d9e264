package webhook

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// MaxAdminBody bounds admin API request bodies.
const MaxAdminBody = 1 << 20

// AdminOp is one admin API operation: JSON in, JSON-able result out.
type AdminOp func(ctx context.Context, in json.RawMessage) (any, error)

// Admin serves /admin/v1/{op}: POST JSON only, loopback peers only, a
// bearer token compared in constant time, and no browser Origin.
type Admin struct {
	token string
	mu    sync.RWMutex
	ops   map[string]AdminOp
	// Peer decides whether a remote address may use the API (default: loopback only).
	Peer func(remoteAddr string) bool
}

// NewAdmin returns the admin API guarded by token.
func NewAdmin(token string) *Admin {
	return &Admin{token: token, ops: map[string]AdminOp{}, Peer: IsLoopbackPeer}
}

// Register adds an operation.
func (a *Admin) Register(name string, op AdminOp) {
	a.mu.Lock()
	a.ops[name] = op
	a.mu.Unlock()
}

// IsLoopbackPeer reports whether remoteAddr is a loopback address.
func IsLoopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP implements the admin API.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if !a.Peer(r.RemoteAddr) {
		return ErrNotLoopback
	}
	if r.Header.Get("Origin") != "" {
		return ErrOrigin
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return ErrMethod
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || a.token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(a.token)) != 1 {
		return ErrUnauthorized
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return ErrContentType
	}
	a.mu.RLock()
	op := a.ops[r.PathValue("op")]
	a.mu.RUnlock()
	if op == nil {
		return ErrNotFound
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxAdminBody))
	if err != nil {
		return ErrTooLarge
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		return ErrBadJSON
	}
	res, err := op(r.Context(), body)
	if err != nil {
		return adminError(err)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": res})
}

// adminError maps manager and store errors to HTTP errors with plain messages.
func adminError(err error) error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	var ue *tasks.UserError
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = ue.Msg
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, store.ErrNotFound):
		if ue == nil {
			msg = "not found" // the store's own words name its internals
		}
		return ErrNotFound.With(msg)
	case errors.Is(err, tasks.ErrForbidden):
		return ErrForbidden.With(msg)
	case errors.Is(err, tasks.ErrScope):
		return ErrScope.With(msg)
	case errors.Is(err, tasks.ErrInvalid), errors.Is(err, tasks.ErrState), errors.Is(err, tasks.ErrLimit),
		errors.Is(err, store.ErrIllegalTransition):
		return ErrConflict.With(msg)
	case errors.Is(err, tasks.ErrNotOwner), errors.Is(err, store.ErrUnavailable):
		return ErrUnavailable.With(msg)
	}
	return err
}

// BadInput marks an operation's input error (400).
func BadInput(msg string) error {
	return ErrBadRequest.With(msg)
}
