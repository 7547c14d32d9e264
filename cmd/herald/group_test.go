package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// serve's parts run under one group: a part that fails on its own is
// reported by name while the others go on, and Run returns only once
// every part has returned after the stop.
func TestRunGroupWaitsForEveryPartAndNamesAFailure(t *testing.T) {
	var g runGroup
	g.log = zerolog.Nop()
	var stopped atomic.Int32
	for _, name := range []string{"delivery", "liveness"} {
		g.add(name, func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond) // a part finishing its work
			stopped.Add(1)
			return ctx.Err()
		})
	}
	broken := errors.New("bad token")
	g.add("telegram", func(context.Context) error { return broken })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while parts were still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	err := <-done
	if stopped.Load() != 2 {
		t.Fatalf("Run returned with %d of 2 parts stopped", stopped.Load())
	}
	if !errors.Is(err, broken) || err.Error() != "telegram: bad token" {
		t.Fatalf("Run error %v, want the failed part by name", err)
	}
}
