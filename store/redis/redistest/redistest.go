// Package redistest gives a test a Redis of its own: the server that
// HERALD_TEST_REDIS_URL names and a key prefix no other test run uses,
// whose keys are removed when the test ends. Nothing else on the server
// is touched.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// URL returns the Redis server the tests use. Without one the test skips
// locally and fails in CI, so a misconfigured pipeline cannot pass by
// skipping.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("HERALD_TEST_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("HERALD_TEST_REDIS_URL is not set in CI")
		}
		t.Skip("HERALD_TEST_REDIS_URL not set")
	}
	return url
}

// Prefix returns the test Redis's URL and a key prefix of this test run
// alone, whose keys are removed when the test ends.
func Prefix(t testing.TB) (url, prefix string) {
	t.Helper()
	url = URL(t)
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	prefix = "herald-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() { deleteKeys(t, url, prefix) })
	return url, prefix
}

// deleteKeys removes every key under prefix, hash-tagged ones included.
func deleteKeys(t testing.TB, url, prefix string) {
	t.Helper()
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Error(err)
		return
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	for _, pattern := range []string{prefix + "*", "{" + prefix + "}*"} {
		iter := rdb.Scan(ctx, 0, pattern, 500).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 500 {
				rdb.Unlink(ctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			rdb.Unlink(ctx, batch...)
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup %s: %v", pattern, err)
		}
	}
}
