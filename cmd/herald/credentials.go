package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"regexp"
	"slices"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// tokenResolver is what spec's source asks for the token its owner gave
// in chat (spec.TokenFrom), read from the credential store at each run;
// nil when spec reads none. A missing credential is an auth failure (the
// owner is told once, as for a revoked token); a store that cannot
// answer is transient.
func tokenResolver(kv store.KV, spec watch.Spec) func(ctx context.Context) (string, error) {
	resolve := credentials.New(kv).Resolver(spec.TokenFrom, spec.URL)
	if resolve == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		tok, err := resolve(ctx)
		switch {
		case errors.Is(err, credentials.ErrNoToken):
			return "", watch.Errorf(watch.Auth, "no access token is stored for this site; the owner can give one again with /token")
		case err != nil:
			return "", watch.Errorf(watch.Transient, "the credential store did not answer")
		}
		return tok, nil
	}
}

var _ source.Session = credentials.Slot{}

// secretField names form fields whose values are never part of a key.
var secretField = regexp.MustCompile(`(?i)(passw|pwd|secret|token|captcha)`)

// sessionOf is the Session spec's form login keeps its cookies in; nil
// when spec signs in with no form.
func sessionOf(kv store.KV, spec watch.Spec) source.Session {
	if spec.Auth == nil || spec.Auth.Login == nil {
		return nil
	}
	l := spec.Auth.Login
	h := sha256.New()
	h.Write([]byte(l.URL + "\x00" + spec.URL + "\x00"))
	for _, k := range slices.Sorted(maps.Keys(l.Form)) {
		if !secretField.MatchString(k) {
			h.Write([]byte(k + "=" + l.Form[k] + "\x00"))
		}
	}
	// The account is the sign-in page with the fields that name the
	// person (a digest, never a password): two watches signing in as one
	// person share a session, two people never do.
	return credentials.New(kv).Slot(l.URL, hex.EncodeToString(h.Sum(nil)[:12]))
}

// cookieResolver is what a source with auth but no cookie or login asks
// for the cookie its owner gave in chat (/login), kept as their channel
// credential for the site.
func cookieResolver(kv store.KV, spec watch.Spec) func(ctx context.Context) (string, error) {
	if spec.Auth == nil || spec.Auth.Cookie != "" || spec.Auth.Login != nil {
		return nil
	}
	resolve := credentials.New(kv).Cookies().Resolver(spec.TokenFrom, spec.URL)
	if resolve == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		ck, err := resolve(ctx)
		switch {
		case errors.Is(err, credentials.ErrNoToken):
			return "", watch.Errorf(watch.Auth, "no cookie is stored for this site; the owner can give one again with /login")
		case err != nil:
			return "", watch.Errorf(watch.Transient, "the credential store did not answer")
		}
		return ck, nil
	}
}
