package configs

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/rs/zerolog"
)

// Coordinator owns the current configuration: it loads the file, swaps in
// a new version only when it is valid, and tells subscribers in order
// (SIGHUP and the admin API call Reload).
type Coordinator struct {
	path   string
	log    zerolog.Logger
	lookup func(string) (string, bool)

	mu   sync.Mutex // serialises loads and subscriber calls
	cur  *Config
	subs []func(*Config) error
}

// NewCoordinator returns a coordinator for the file at path. Nothing is
// read until Load.
func NewCoordinator(path string, log zerolog.Logger) *Coordinator {
	return &Coordinator{path: path, log: log, lookup: os.LookupEnv}
}

// Subscribe registers fn to receive every configuration that is swapped
// in, in registration order. A subscriber error is reported by Load or
// Reload; the new configuration stays current.
func (c *Coordinator) Subscribe(fn func(*Config) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, fn)
}

// Current returns the configuration in force (nil before a successful Load).
func (c *Coordinator) Current() *Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// Load reads the file for the first time.
func (c *Coordinator) Load() error { return c.reload("load") }

// Reload reads the file again. On error the previous configuration stays
// in force and the error is logged and returned.
func (c *Coordinator) Reload() error { return c.reload("reload") }

func (c *Coordinator) reload(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, err := LoadEnv(c.path, c.lookup)
	if err != nil {
		var ce *Error
		n := 1
		if errors.As(err, &ce) {
			n = len(ce.Problems)
		}
		// Messages are secret-free by construction.
		c.log.Error().Str("op", op).Int("problems", n).Err(err).Msg("configuration rejected; keeping the previous one")
		return fmt.Errorf("%s config: %w", op, err)
	}
	c.cur = cfg
	for _, w := range cfg.Warnings {
		c.log.Warn().Str("op", op).Msg(w)
	}
	var errs []error
	for i, fn := range c.subs {
		if err := fn(cfg); err != nil {
			c.log.Error().Str("op", op).Int("subscriber", i).Err(err).Msg("applying configuration failed")
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s config: %w", op, errors.Join(errs...))
	}
	c.log.Info().Str("op", op).Int("tasks", len(cfg.Tasks)).Int("recipients", len(cfg.Recipients)).Msg("configuration loaded")
	return nil
}
