package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Sign-in lifetimes.
const (
	// DefaultCodeTTL is how long a sign-in code from `herald console login` works.
	DefaultCodeTTL = 10 * time.Minute
	// MaxCodeTTL bounds what an operator may ask for.
	MaxCodeTTL = time.Hour
	// SessionTTL is how long a console session lasts after sign-in.
	SessionTTL = 12 * time.Hour
)

// Prefixes make a code or a session token recognisable when pasted in
// the wrong place; only their hashes are stored.
const (
	codePrefix    = "hcc_"
	sessionPrefix = "hcs_"
)

// Errors of signing in.
var (
	// ErrBadCode: the code is unknown, already used, expired or revoked.
	ErrBadCode = errors.New("the sign-in code is wrong, used or expired")
	// ErrNoSession: no valid session for the cookie.
	ErrNoSession = errors.New("not signed in")
)

// Sessions issues one-time sign-in codes and the sessions they turn into.
// Both live in the channel-state KV under their own key prefixes, keyed
// by a hash, so a store dump holds no usable token. A generation counter
// revokes every session and every code at once (`herald console logout
// --all`) without listing them, and works across replicas sharing a store.
type Sessions struct {
	KV    store.KV
	Dedup store.Dedup // one use per code, across replicas
	Now   func() time.Time
}

// Session is one signed-in admin.
type Session struct {
	Principal string    `json:"p"`
	CSRF      string    `json:"csrf"`
	Gen       uint64    `json:"gen"`
	Expires   time.Time `json:"exp"`
}

type codeRecord struct {
	Principal string    `json:"p"`
	Gen       uint64    `json:"gen"`
	Expires   time.Time `json:"exp"`
}

func hashKey(prefix, tok string) string {
	h := sha256.Sum256([]byte(tok))
	return prefix + hex.EncodeToString(h[:])
}

func randomToken(prefix string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

const generationKey = "console/generation"

func (s *Sessions) generation(ctx context.Context) (uint64, error) {
	b, err := s.KV.Get(ctx, generationKey)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// NewCode makes a one-time sign-in code for principal, valid for ttl.
func (s *Sessions) NewCode(ctx context.Context, principal string, ttl time.Duration) (string, time.Time, error) {
	if ttl <= 0 {
		ttl = DefaultCodeTTL
	}
	if ttl > MaxCodeTTL {
		ttl = MaxCodeTTL
	}
	gen, err := s.generation(ctx)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read console generation: %w", err)
	}
	code, err := randomToken(codePrefix)
	if err != nil {
		return "", time.Time{}, err
	}
	exp := s.now().Add(ttl)
	b, _ := json.Marshal(codeRecord{Principal: principal, Gen: gen, Expires: exp})
	if err := s.KV.Put(ctx, hashKey("console/code/", code), b, ttl); err != nil {
		return "", time.Time{}, fmt.Errorf("store sign-in code: %w", err)
	}
	return code, exp, nil
}

// Exchange spends a code and opens a session; it returns the session
// token (the cookie's value) and the session. A code works once.
func (s *Sessions) Exchange(ctx context.Context, code string) (string, Session, error) {
	code = strings.TrimSpace(code)
	if !strings.HasPrefix(code, codePrefix) || len(code) > 128 {
		return "", Session{}, ErrBadCode
	}
	key := hashKey("console/code/", code)
	b, err := s.KV.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", Session{}, ErrBadCode
	}
	if err != nil {
		return "", Session{}, fmt.Errorf("read sign-in code: %w", err)
	}
	var rec codeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return "", Session{}, ErrBadCode
	}
	now := s.now()
	gen, err := s.generation(ctx)
	if err != nil {
		return "", Session{}, fmt.Errorf("read console generation: %w", err)
	}
	if !now.Before(rec.Expires) || rec.Gen != gen {
		_ = s.KV.Delete(ctx, key)
		return "", Session{}, ErrBadCode
	}
	first, err := s.Dedup.Mark(ctx, "console-code", key, rec.Expires.Sub(now)+time.Minute)
	if err != nil {
		return "", Session{}, fmt.Errorf("spend sign-in code: %w", err)
	}
	_ = s.KV.Delete(ctx, key)
	if !first {
		return "", Session{}, ErrBadCode
	}
	tok, err := randomToken(sessionPrefix)
	if err != nil {
		return "", Session{}, err
	}
	csrf, err := randomToken("")
	if err != nil {
		return "", Session{}, err
	}
	sess := Session{Principal: rec.Principal, CSRF: csrf, Gen: gen, Expires: now.Add(SessionTTL)}
	sb, _ := json.Marshal(sess)
	if err := s.KV.Put(ctx, hashKey("console/session/", tok), sb, SessionTTL); err != nil {
		return "", Session{}, fmt.Errorf("store session: %w", err)
	}
	return tok, sess, nil
}

// Lookup returns the live session for a token.
func (s *Sessions) Lookup(ctx context.Context, tok string) (Session, error) {
	if !strings.HasPrefix(tok, sessionPrefix) || len(tok) > 128 {
		return Session{}, ErrNoSession
	}
	b, err := s.KV.Get(ctx, hashKey("console/session/", tok))
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	var sess Session
	if err := json.Unmarshal(b, &sess); err != nil {
		return Session{}, ErrNoSession
	}
	gen, err := s.generation(ctx)
	if err != nil {
		return Session{}, fmt.Errorf("read console generation: %w", err)
	}
	if sess.Gen != gen || !s.now().Before(sess.Expires) {
		return Session{}, ErrNoSession
	}
	return sess, nil
}

// End closes one session (sign out in the page).
func (s *Sessions) End(ctx context.Context, tok string) error {
	if !strings.HasPrefix(tok, sessionPrefix) {
		return nil
	}
	return s.KV.Delete(ctx, hashKey("console/session/", tok))
}

// RevokeAll ends every session and every unused code.
func (s *Sessions) RevokeAll(ctx context.Context) error {
	gen, err := s.generation(ctx)
	if err != nil {
		return fmt.Errorf("read console generation: %w", err)
	}
	return s.KV.Put(ctx, generationKey, []byte(strconv.FormatUint(gen+1, 10)), 0)
}
