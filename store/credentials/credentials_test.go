package credentials_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/credentials"
	"github.com/herald-bridge/herald/store/redis"
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

// The resolver a source asks: nil for a task that reads no stored
// credential; a missing credential and a store that does not answer are
// told apart (ErrNoToken, ErrUnanswered), so the caller can classify them.
func TestResolverTellsAMissingCredentialFromAStoreThatDoesNotAnswer(t *testing.T) {
	backends(t, resolverClasses)
	_, err := credentials.New(downKV{}).Resolver("telegram:42", "https://school.instructure.com")(context.Background())
	if !errors.Is(err, credentials.ErrUnanswered) || errors.Is(err, credentials.ErrNoToken) {
		t.Fatalf("store down: %v, want ErrUnanswered", err)
	}
}

func resolverClasses(t *testing.T, s *credentials.Store) {
	ctx := context.Background()
	const site = "https://school.instructure.com"
	t.Cleanup(func() { _ = s.Delete(ctx, "telegram:42", site) })
	if s.Resolver("", site) != nil {
		t.Fatal("a task that reads no stored credential got a resolver")
	}
	_, err := s.Resolver("telegram:42", site)(ctx)
	if !errors.Is(err, credentials.ErrNoToken) {
		t.Fatalf("missing credential: %v, want ErrNoToken", err)
	}
	if err := s.Put(ctx, "telegram:42", site, "tok-b"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Resolver("telegram:42", site)(ctx); err != nil || got != "tok-b" {
		t.Fatalf("resolved %q %v", got, err)
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

// TestTokenCookieAndSessionAreSeparateCredentials: a person's course
// token, sign-in cookie and a form login's session for one site are kept
// apart: forgetting one leaves the others, and each has its own bound.
func TestTokenCookieAndSessionAreSeparateCredentials(t *testing.T) {
	backends(t, func(t *testing.T, s *credentials.Store) {
		ctx := context.Background()
		const who, site = "telegram:42", "https://portal.example.edu/notices"
		if err := s.Put(ctx, who, site, "tok-123456789"); err != nil {
			t.Fatal(err)
		}
		if err := s.Cookies().Put(ctx, who, site, "JSESSIONID=abc"); err != nil {
			t.Fatal(err)
		}
		slot := s.Slot(site, "account-1")
		if err := slot.Save(ctx, `[{"n":"S","v":"1"}]`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = s.Delete(ctx, who, site)
			_ = s.Cookies().Delete(ctx, who, site)
			_ = s.DeleteSession(ctx, site, "account-1")
		})
		if err := s.Cookies().Delete(ctx, who, site); err != nil {
			t.Fatal(err)
		}
		if tok, err := s.Get(ctx, who, site); err != nil || tok != "tok-123456789" {
			t.Fatalf("token after the cookie was forgotten: %q, %v", tok, err)
		}
		if st, err := slot.Load(ctx); err != nil || st != `[{"n":"S","v":"1"}]` {
			t.Fatalf("session after the cookie was forgotten: %q, %v", st, err)
		}
		if st, err := s.Slot(site, "account-2").Load(ctx); err != nil || st != "" {
			t.Fatalf("another account's session: %q, %v", st, err)
		}
		long := make([]byte, credentials.MaxToken+1)
		for i := range long {
			long[i] = 'a'
		}
		if err := s.Put(ctx, who, site, string(long)); err == nil {
			t.Error("a token over its bound was kept")
		}
		if err := s.Cookies().Put(ctx, who, site, "c="+string(long)); err != nil {
			t.Errorf("a cookie within its bound was refused: %v", err)
		}
	})
}
