package main

import (
	"context"
	"errors"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/credentials"
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
