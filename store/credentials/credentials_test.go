package credentials_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/tasks/watch"
)

// backends runs fn on a bbolt store and, when HERALD_TEST_REDIS_URL is
// set, on Redis under a key prefix of its own; what fn stores is deleted
// through forget.
func backends(t *testing.T, fn func(t *testing.T, s *credentials.Store)) {
	t.Run("bolt", func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, credentials.New(st.Channels()))
	})
	t.Run("redis", func(t *testing.T) {
		url := os.Getenv("HERALD_TEST_REDIS_URL")
		if url == "" {
			t.Skip("HERALD_TEST_REDIS_URL not set")
		}
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: "herald-test-cred:" + hex.EncodeToString(b) + ":"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, credentials.New(st.Channels()))
	})
}

func TestSiteIsTheOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://School.Instructure.com":                "https://school.instructure.com",
		"https://school.instructure.com/courses/1?x=2":  "https://school.instructure.com",
		"http://127.0.0.1:8080/moodle/":                 "http://127.0.0.1:8080",
		" https://moodle.example.edu/webservice/ ":      "https://moodle.example.edu",
		"https://user:pw@school.instructure.com/a/b#id": "https://school.instructure.com",
	} {
		if got, err := credentials.Site(in); err != nil || got != want {
			t.Errorf("Site(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "school.instructure.com", "ftp://x.example", "https://"} {
		if _, err := credentials.Site(bad); !errors.Is(err, credentials.ErrBadSite) {
			t.Errorf("Site(%q): %v, want ErrBadSite", bad, err)
		}
	}
}

// A credential belongs to one principal and one site: another person, or
// another port of the same host, does not read it.
func TestI10_CredentialPerPrincipalAndSite(t *testing.T) { backends(t, perPrincipalAndSite) }

func perPrincipalAndSite(t *testing.T, s *credentials.Store) {
	ctx := context.Background()
	t.Cleanup(func() { _ = s.Delete(ctx, "telegram:42", "https://school.instructure.com") })
	if err := s.Put(ctx, "telegram:42", "https://school.instructure.com/courses", "tok-a"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "telegram:42", "https://SCHOOL.instructure.com/"); err != nil || got != "tok-a" {
		t.Fatalf("same site: %q %v", got, err)
	}
	for _, other := range [][2]string{{"telegram:43", "https://school.instructure.com"}, {"telegram:42", "https://school.instructure.com:8443"}, {"telegram:42", "http://school.instructure.com"}} {
		if _, err := s.Get(ctx, other[0], other[1]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%v reads the credential: %v", other, err)
		}
	}
	if err := s.Put(ctx, "telegram:42", "https://school.instructure.com", ""); err == nil {
		t.Error("an empty token was stored")
	}
	if err := s.Delete(ctx, "telegram:42", "https://school.instructure.com"); err != nil {
		t.Fatal(err)
	}
	if has, err := s.Has(ctx, "telegram:42", "https://school.instructure.com"); has || err != nil {
		t.Fatalf("after delete: %v %v", has, err)
	}
}

// The resolver a source asks: nil for a spec that does not read a stored
// credential; a missing credential is an auth failure, so the owner is
// told once, as for a revoked token.
func TestResolverClassifiesAMissingCredentialAsAuth(t *testing.T) { backends(t, resolverClasses) }

func resolverClasses(t *testing.T, s *credentials.Store) {
	ctx := context.Background()
	t.Cleanup(func() { _ = s.Delete(ctx, "telegram:42", "https://school.instructure.com") })
	if s.Resolver(watch.Spec{Kind: "canvas", URL: "https://school.instructure.com", Token: "from-config"}) != nil {
		t.Fatal("a spec with its own token got a resolver")
	}
	spec := watch.Spec{Kind: "canvas", URL: "https://school.instructure.com", TokenFrom: "telegram:42"}
	_, err := s.Resolver(spec)(ctx)
	var we *watch.Error
	if !errors.As(err, &we) || we.Class != watch.Auth {
		t.Fatalf("missing credential: %v, want an auth failure", err)
	}
	if err := s.Put(ctx, "telegram:42", spec.URL, "tok-b"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Resolver(spec)(ctx); err != nil || got != "tok-b" {
		t.Fatalf("resolved %q %v", got, err)
	}
}
