package scheduler

import (
	"context"
	"testing"
	"time"
)

func TestSlotsResize(t *testing.T) {
	s := newSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan struct{})
	go func() {
		if err := s.acquire(ctx); err == nil {
			close(got)
		}
	}()
	select {
	case <-got:
		t.Fatal("a third run started with two slots")
	case <-time.After(50 * time.Millisecond):
	}
	s.resize(3) // a reload raising the cap starts the waiting run at once
	<-got

	s.resize(1) // lowering it lets running ones finish, starts none
	s.release()
	s.release()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.acquire(short); err == nil {
		t.Fatal("a run started above the lowered cap")
	}
	s.release()
	if err := s.acquire(ctx); err != nil || s.inUse() != 1 {
		t.Fatalf("acquire after release: %v, %d in use", err, s.inUse())
	}
}
