// Package transfertest builds what an import test needs: a task manager
// on a fresh bbolt store that never fetches, and bundles with one hostile
// entry beside a valid one.
package transfertest

import (
	"archive/zip"
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
)

// Manager returns a catalog under p on a fresh store, closed at the end
// of the test. Nothing schedules it: an import needs no schedule, and no
// source is ever fetched.
func Manager(t testing.TB, p tasks.Policy) (*tasks.Manager, store.Store) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := tasks.New(tasks.Options{
		Store: st, Holder: "replica-a", Log: zerolog.Nop(), Policy: p,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, st
}

// HostileBundle is a bundle whose herald-bundle.yaml would import one rss
// task of url, beside an entry named hostile that must get it refused.
func HostileBundle(t testing.TB, url, hostile string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range []struct{ name, body string }{
		{"herald-bundle.yaml", "format: 1\ncreated: 2026-11-02T09:00:00Z\nherald: test\ntasks:\n  - name: sneaky\n    source: {kind: rss, url: \"" + url + "\"}\n"},
		{hostile, "x"},
	} {
		w, err := zw.Create(e.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
