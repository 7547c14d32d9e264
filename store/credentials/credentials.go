// Package credentials keeps the access tokens people give herald in chat
// (a course site's personal token): channel credentials, one per
// principal and site, in the channel-state storage object under their own
// key prefix. A token lives only here: the task that uses it names its
// owner and the source asks for the token at each run, so it is never in
// a task record, an export, a reply or a log (I10).
package credentials

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/store"
)

var (
	// ErrBadSite reports a site address that is not an absolute http(s) URL.
	ErrBadSite = errors.New("credentials: the site must be an http(s) address")
	// ErrNoToken: no token is stored for the owner and site a resolver
	// asks for (never given, or given and deleted).
	ErrNoToken = errors.New("credentials: no access token is stored for this site")
	// ErrUnanswered: the storage behind the credentials did not answer.
	ErrUnanswered = errors.New("credentials: the credential store did not answer")
)

// MaxToken bounds a stored token; course sites' tokens are under 100 bytes.
const MaxToken = 1024

// MaxCookie bounds a stored sign-in cookie: browsers keep 4 KiB a cookie.
const MaxCookie = 4096

// Store keeps credentials in a KV (store.Store.Channels()).
type Store struct {
	kv     store.KV
	prefix string // "cred/": access tokens; "cookie/": sign-in cookies
}

// New returns the credential store kept in kv: its access tokens.
func New(kv store.KV) *Store { return &Store{kv: kv, prefix: "cred/"} }

// Cookies is the same store's sign-in cookies (/login; a source's
// auth with neither a cookie nor a login in it), one per principal and
// site, apart from its access tokens.
func (s *Store) Cookies() *Store { return &Store{kv: s.kv, prefix: "cookie/"} }

// Site is the origin a credential belongs to: scheme://host[:port], in
// lower case; the path, query and any user info are not part of it.
func Site(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", ErrBadSite
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func (s *Store) key(principal, site string) string { return s.prefix + site + "|" + principal }

// Put stores principal's token for the site rawURL is on, replacing any.
func (s *Store) Put(ctx context.Context, principal, rawURL, token string) error {
	site, err := Site(rawURL)
	if err != nil {
		return err
	}
	max := MaxToken
	switch s.prefix {
	case "cookie/":
		max = MaxCookie
	case "session/":
		max = MaxSession
	}
	if token == "" || len(token) > max {
		return errors.New("credentials: empty or oversized credential")
	}
	if err := s.kv.Put(ctx, s.key(principal, site), []byte(token), 0); err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	return nil
}

// Get returns principal's token for the site rawURL is on;
// store.ErrNotFound when none is stored.
func (s *Store) Get(ctx context.Context, principal, rawURL string) (string, error) {
	site, err := Site(rawURL)
	if err != nil {
		return "", err
	}
	b, err := s.kv.Get(ctx, s.key(principal, site))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Has reports whether principal has a token stored for rawURL's site.
func (s *Store) Has(ctx context.Context, principal, rawURL string) (bool, error) {
	_, err := s.Get(ctx, principal, rawURL)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// Delete forgets principal's token for rawURL's site.
func (s *Store) Delete(ctx context.Context, principal, rawURL string) error {
	site, err := Site(rawURL)
	if err != nil {
		return err
	}
	if err := s.kv.Delete(ctx, s.key(principal, site)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// Resolver is what a source asks for a token at run time: the credential
// owner stored for the site rawURL is on. nil when owner is "" (the task
// reads no stored credential). Its errors are ErrNoToken, ErrUnanswered
// or ErrBadSite, without the store's own message.
func (s *Store) Resolver(owner, rawURL string) func(ctx context.Context) (string, error) {
	if s == nil || owner == "" {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		tok, err := s.Get(ctx, owner, rawURL)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return "", ErrNoToken
		case errors.Is(err, ErrBadSite):
			return "", err
		case err != nil:
			return "", ErrUnanswered
		}
		return tok, nil
	}
}

// MaxSession bounds a kept sign-in session (its cookies, encoded).
const MaxSession = 16 << 10

// Sessions are the cookies a form login of a source obtained
// (docs/sources.md, Sources behind a login or JavaScript), kept under
// their own key prefix per sign-in site and account so that later runs
// and a restarted herald reuse them instead of signing in again.
func (s *Store) sessions() *Store { return &Store{kv: s.kv, prefix: "session/"} }

// Session returns the session kept for account at the site rawURL is
// on; "" when none is kept.
func (s *Store) Session(ctx context.Context, rawURL, account string) (string, error) {
	state, err := s.sessions().Get(ctx, account, rawURL)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case errors.Is(err, ErrBadSite):
		return "", err
	case err != nil:
		return "", ErrUnanswered
	}
	return state, nil
}

// PutSession keeps account's session at rawURL's site, replacing any.
func (s *Store) PutSession(ctx context.Context, rawURL, account, state string) error {
	return s.sessions().Put(ctx, account, rawURL, state)
}

// DeleteSession forgets account's session at rawURL's site.
func (s *Store) DeleteSession(ctx context.Context, rawURL, account string) error {
	return s.sessions().Delete(ctx, account, rawURL)
}

// Slot is one account's session at one site, in the shape a source keeps
// its sign-in in (source.Session).
type Slot struct {
	s       *Store
	url     string
	account string
}

// Slot returns account's session slot at the site rawURL is on.
func (s *Store) Slot(rawURL, account string) Slot { return Slot{s: s, url: rawURL, account: account} }

// Load returns the kept session, "" when none is kept.
func (k Slot) Load(ctx context.Context) (string, error) { return k.s.Session(ctx, k.url, k.account) }

// Save keeps state as the session.
func (k Slot) Save(ctx context.Context, state string) error {
	return k.s.PutSession(ctx, k.url, k.account, state)
}
