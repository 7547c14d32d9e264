package webhook

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/herald-bridge/herald/store"
)

// InboxTokens issues and checks per-principal inbox bearer tokens; only a
// hash of each token is stored.
type InboxTokens struct{ KV store.KV }

func tokenKey(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return "inboxtoken/" + hex.EncodeToString(h[:])
}

// Issue makes a new token for principal (older ones stay valid).
func (t InboxTokens) Issue(ctx context.Context, principal string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := "hin_" + hex.EncodeToString(b)
	if err := t.KV.Put(ctx, tokenKey(tok), []byte(principal), 0); err != nil {
		return "", fmt.Errorf("store inbox token: %w", err)
	}
	return tok, nil
}

// Lookup returns the principal a token belongs to.
func (t InboxTokens) Lookup(ctx context.Context, tok string) (string, error) {
	if !strings.HasPrefix(tok, "hin_") {
		return "", store.ErrNotFound
	}
	b, err := t.KV.Get(ctx, tokenKey(tok))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// InboxAPI serves GET /api/v1/inbox for the bearer token's principal.
type InboxAPI struct {
	Tokens InboxTokens
	Inbox  store.Inbox
}

// ServeHTTP lists inbox items newest first: ?before=<id>&limit=N&unread=1.
func (a *InboxAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return ErrMethod
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ErrUnauthorized
	}
	principal, err := a.Tokens.Lookup(r.Context(), tok)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnauthorized
	}
	if err != nil {
		return ErrUnavailable
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	switch {
	case limit <= 0:
		limit = 50
	case limit > 200:
		limit = 200
	}
	items, err := a.Inbox.List(r.Context(), principal, store.InboxQuery{Before: q.Get("before"), Limit: limit, UnreadOnly: q.Get("unread") == "1"})
	if err != nil {
		return ErrUnavailable
	}
	unread, _ := a.Inbox.Unread(r.Context(), principal)
	next := ""
	if len(items) == limit {
		next = items[len(items)-1].ID
	}
	type item struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		Message   any    `json:"message"`
		CreatedAt string `json:"created_at"`
		Read      bool   `json:"read"`
	}
	out := make([]item, 0, len(items))
	for _, it := range items {
		out = append(out, item{ID: it.ID, Title: it.Title, Message: rawJSON(it.Body), CreatedAt: it.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00"), Read: it.Read})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "principal": principal, "unread": unread, "items": out, "next_before": next})
}

type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}
