package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/tasks/watch"
)

// A source asks for a token given in chat: none for a spec with its own
// token; a missing credential is an auth failure, so the owner is told
// once, as for a revoked token; a store that does not answer is transient.
func TestTokenResolverClassifiesCredentialFailures(t *testing.T) {
	ctx := context.Background()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if tokenResolver(st.Channels(), watch.Spec{Kind: "canvas", URL: "https://school.instructure.com", Token: "from-config"}) != nil {
		t.Fatal("a spec with its own token got a resolver")
	}
	spec := watch.Spec{Kind: "canvas", URL: "https://school.instructure.com", TokenFrom: "telegram:42"}
	_, err = tokenResolver(st.Channels(), spec)(ctx)
	var we *watch.Error
	if !errors.As(err, &we) || we.Class != watch.Auth {
		t.Fatalf("missing credential: %v, want an auth failure", err)
	}
	if err := credentials.New(st.Channels()).Put(ctx, "telegram:42", spec.URL, "tok-b"); err != nil {
		t.Fatal(err)
	}
	if got, err := tokenResolver(st.Channels(), spec)(ctx); err != nil || got != "tok-b" {
		t.Fatalf("resolved %q %v", got, err)
	}
	_, err = tokenResolver(downKV{}, spec)(ctx)
	if !errors.As(err, &we) || we.Class != watch.Transient {
		t.Fatalf("store down: %v, want a transient failure", err)
	}
}

// downKV is channel storage that does not answer.
type downKV struct{}

var _ store.KV = downKV{}

func (downKV) Get(context.Context, string) ([]byte, error) { return nil, store.ErrUnavailable }
func (downKV) Put(context.Context, string, []byte, time.Duration) error {
	return store.ErrUnavailable
}
func (downKV) Delete(context.Context, string) error { return store.ErrUnavailable }
