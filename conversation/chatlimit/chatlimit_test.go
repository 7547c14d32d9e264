package chatlimit

import (
	"fmt"
	"testing"
	"time"
)

func TestBurstThenOneRefusalThenSilence(t *testing.T) {
	l := New(30, 10)
	now := time.Unix(1_800_000_000, 0)
	for i := range 10 {
		if v := l.Take("telegram:1", now); v != Allow {
			t.Fatalf("message %d: %v, want Allow within the burst", i+1, v)
		}
	}
	if v := l.Take("telegram:1", now); v != Refuse {
		t.Fatalf("11th: %v, want Refuse (one polite answer)", v)
	}
	for i := range 100 {
		if v := l.Take("telegram:1", now); v != Drop {
			t.Fatalf("over-limit message %d: %v, want Drop", i, v)
		}
	}
	if got := l.RetryAfter("telegram:1", now); got != 2*time.Second {
		t.Fatalf("RetryAfter = %v, want 2s at 30/min", got)
	}
	// Another principal is unaffected.
	if v := l.Take("feishu:ou_x", now); v != Allow {
		t.Fatalf("other principal: %v, want Allow", v)
	}
	// After 2 s one token is back; the next refusal is told again.
	now = now.Add(2 * time.Second)
	if v := l.Take("telegram:1", now); v != Allow {
		t.Fatalf("after refill: %v, want Allow", v)
	}
	if v := l.Take("telegram:1", now); v != Refuse {
		t.Fatalf("after refill, over again: %v, want Refuse", v)
	}
}

func TestSteadyRateIsAllowed(t *testing.T) {
	l := New(30, 10)
	now := time.Unix(1_800_000_000, 0)
	for i := range 300 { // ten minutes at exactly the limit
		if v := l.Take("p", now); v != Allow {
			t.Fatalf("message %d at 30/min: %v", i, v)
		}
		now = now.Add(2 * time.Second)
	}
}

func TestIdlePrincipalsAreForgotten(t *testing.T) {
	l := New(30, 10)
	now := time.Unix(1_800_000_000, 0)
	for i := range 3 * maxIdle {
		l.Take(fmt.Sprint("p", i), now)
		now = now.Add(time.Second)
	}
	if n := len(l.buckets); n > maxIdle {
		t.Fatalf("%d buckets kept, want at most %d", n, maxIdle)
	}
}
