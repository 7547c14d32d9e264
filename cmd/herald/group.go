package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
)

// runGroup is serve's long-running parts: the scheduler, delivery, the
// liveness beat and the channels. Run starts every part under one
// context and returns once all of them have ended.
type runGroup struct {
	log   zerolog.Logger
	names []string
	parts []func(context.Context) error
}

// add adds a part; a part must return once its context ends.
func (g *runGroup) add(name string, fn func(context.Context) error) {
	g.names = append(g.names, name)
	g.parts = append(g.parts, fn)
}

// Run runs every part until ctx ends and they have all returned. A part
// that stops on its own with an error is logged with its name while the
// others go on, as a channel that fails must not stop delivery; Run
// returns those errors joined.
func (g *runGroup) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(g.parts))
	for i, fn := range g.parts {
		wg.Go(func() {
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				g.log.Error().Str("component", g.names[i]).Err(err).Msg("component stopped")
				errs[i] = fmt.Errorf("%s: %w", g.names[i], err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
