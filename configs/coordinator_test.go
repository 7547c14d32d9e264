package configs

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestCoordinator writes src to a config file in a temp dir and returns
// a coordinator for it with lookup as its environment.
func newTestCoordinator(t *testing.T, src string, lookup func(string) (string, bool)) (*Coordinator, string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	writeFile(t, path, src)
	logs := &syncBuffer{}
	c := NewCoordinator(path, zerolog.New(logs))
	c.lookup = lookup
	return c, path, logs
}

func writeFile(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

const goodConfig = `channels:
  telegram: {enabled: true, token: "${TOKEN}"}
recipients:
  me: {address: "inbox:console:admin"}
`

func TestCoordinator_ReloadKeepsOldConfigOnBadFile(t *testing.T) {
	const token = "999:very-secret-token"
	c, path, logs := newTestCoordinator(t, goodConfig, env("TOKEN", token))
	var calls []string
	c.Subscribe(func(cfg *Config) error {
		calls = append(calls, "first:"+strings.Join(slices.Sorted(maps.Keys(cfg.Recipients)), ","))
		return nil
	})
	c.Subscribe(func(cfg *Config) error { calls = append(calls, "second"); return nil })

	if c.Current() != nil {
		t.Fatal("Current before Load must be nil")
	}
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	first := c.Current()
	if first == nil || !first.Channels.Telegram.Enabled {
		t.Fatalf("current = %+v", first)
	}

	writeFile(t, path, goodConfig+"  bad: {address: \"telegram:chat:x\"}\nbogus: 1\n")
	err := c.Reload()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reload = %v, want ErrInvalid", err)
	}
	if c.Current() != first {
		t.Error("a bad file replaced the config in force")
	}
	if strings.Join(calls, " ") != "first:me second" {
		t.Errorf("subscribers called %q, want once each for the first load", calls)
	}

	writeFile(t, path, goodConfig+"  ops: {address: \"telegram:chat:-100123\"}\n")
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if c.Current() == first || len(c.Current().Recipients) != 2 {
		t.Error("a good file was not swapped in")
	}
	if got := strings.Join(calls, " "); got != "first:me second first:me,ops second" {
		t.Errorf("subscriber calls = %q", got)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "-100123") {
		t.Errorf("logs leak a secret or address: %s", logs.String())
	}
}

func TestCoordinator_SubscriberErrorIsReportedConfigStays(t *testing.T) {
	c, _, _ := newTestCoordinator(t, goodConfig, noEnv)
	boom := errors.New("channel restart failed")
	var second bool
	c.Subscribe(func(*Config) error { return boom })
	c.Subscribe(func(*Config) error { second = true; return nil })
	if err := c.Load(); !errors.Is(err, boom) {
		t.Fatalf("Load = %v, want the subscriber error", err)
	}
	if c.Current() == nil || !second {
		t.Error("the config must stay swapped in and later subscribers still run")
	}
	if w := c.Current().Warnings; len(w) != 1 {
		t.Errorf("warnings = %q", w)
	}
}

func TestCoordinator_MissingFile(t *testing.T) {
	c := NewCoordinator(filepath.Join(t.TempDir(), "absent.yaml"), zerolog.Nop())
	if err := c.Load(); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load = %v, want not-exist", err)
	}
}
