package agentapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
)

// tokenPrefix starts every agent token, so that one is told apart from
// the admin token and inbox tokens at a glance (and in leak scanners).
const tokenPrefix = "hag_"

// Key layout in the channel-state object, where credentials live:
//
//	agent/<name>        the agent's record (token hash, creation time)
//	agenthash/<sha256>  the name the token with that hash belongs to
//	agents              the names, for listing
const (
	keyAgent = "agent/"
	keyHash  = "agenthash/"
	keyIndex = "agents"
)

// Agent is one registered agent, as listed (never its token).
type Agent struct {
	Name      string    `json:"name"`
	Principal string    `json:"principal"`
	CreatedAt time.Time `json:"created_at"`
}

type record struct {
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

// Tokens issues, checks and revokes agent tokens. Only a SHA-256 hash of
// a token is stored; the token itself is shown once, when issued.
type Tokens struct {
	KV  store.KV
	Now func() time.Time
	mu  sync.Mutex // orders this process's index updates
}

// ErrBadName means an agent name is not well formed.
var ErrBadName = errors.New("an agent name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")

func hashOf(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return time.Now().UTC()
}

// Issue makes a new token for agent name, replacing (and so revoking)
// any token the agent had.
func (t *Tokens) Issue(ctx context.Context, name string) (string, error) {
	if !address.IsAgentName(name) {
		return "", ErrBadName
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := tokenPrefix + hex.EncodeToString(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, err := t.record(ctx, name); err == nil {
		if err := t.KV.Delete(ctx, keyHash+old.Hash); err != nil {
			return "", fmt.Errorf("revoke the old agent token: %w", err)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	rec, err := json.Marshal(record{Hash: hashOf(tok), CreatedAt: t.now()})
	if err != nil {
		return "", err
	}
	if err := t.KV.Put(ctx, keyAgent+name, rec, 0); err != nil {
		return "", fmt.Errorf("store the agent token: %w", err)
	}
	if err := t.KV.Put(ctx, keyHash+hashOf(tok), []byte(name), 0); err != nil {
		return "", fmt.Errorf("store the agent token: %w", err)
	}
	return tok, t.index(ctx, func(names []string) []string {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return names
	})
}

// Revoke ends agent name's token at once. store.ErrNotFound when the
// agent has none.
func (t *Tokens) Revoke(ctx context.Context, name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec, err := t.record(ctx, name)
	if err != nil {
		return err
	}
	// The hash entry goes first: from then on the token opens nothing.
	if err := t.KV.Delete(ctx, keyHash+rec.Hash); err != nil {
		return fmt.Errorf("revoke the agent token: %w", err)
	}
	if err := t.KV.Delete(ctx, keyAgent+name); err != nil {
		return fmt.Errorf("revoke the agent token: %w", err)
	}
	return t.index(ctx, func(names []string) []string {
		return slices.DeleteFunc(names, func(n string) bool { return n == name })
	})
}

// List returns the agents that hold a token, by name.
func (t *Tokens) List(ctx context.Context) ([]Agent, error) {
	names, err := t.names(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Agent, 0, len(names))
	for _, n := range names {
		rec, err := t.record(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Agent{Name: n, Principal: address.AgentPrefix + n, CreatedAt: rec.CreatedAt})
	}
	return out, nil
}

// Lookup returns the name of the agent tok belongs to; store.ErrNotFound
// for a token that is wrong, revoked or replaced.
func (t *Tokens) Lookup(ctx context.Context, tok string) (string, error) {
	if !strings.HasPrefix(tok, tokenPrefix) || len(tok) > 128 {
		return "", store.ErrNotFound
	}
	h := hashOf(tok)
	name, err := t.KV.Get(ctx, keyHash+h)
	if err != nil {
		return "", err
	}
	rec, err := t.record(ctx, string(name))
	if err != nil {
		return "", err
	}
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
		return "", store.ErrNotFound
	}
	return string(name), nil
}

func (t *Tokens) record(ctx context.Context, name string) (record, error) {
	raw, err := t.KV.Get(ctx, keyAgent+name)
	if err != nil {
		return record{}, err
	}
	var rec record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return record{}, fmt.Errorf("agent record %s: %w", name, err)
	}
	return rec, nil
}

func (t *Tokens) names(ctx context.Context) ([]string, error) {
	raw, err := t.KV.Get(ctx, keyIndex)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fmt.Errorf("agent index: %w", err)
	}
	return names, nil
}

func (t *Tokens) index(ctx context.Context, change func([]string) []string) error {
	names, err := t.names(ctx)
	if err != nil {
		return err
	}
	names = change(names)
	slices.Sort(names)
	raw, err := json.Marshal(names)
	if err != nil {
		return err
	}
	if err := t.KV.Put(ctx, keyIndex, raw, 0); err != nil {
		return fmt.Errorf("store the agent index: %w", err)
	}
	return nil
}
