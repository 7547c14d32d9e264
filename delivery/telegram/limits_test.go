package telegram

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestPacing(t *testing.T) {
	cases := []struct {
		name string
		chat int64
		n    int
		want time.Duration
	}{
		{"private chat 1/s", 42, 3, 2 * time.Second},
		// burst of 5, then one every 3 s
		{"group chat 20/min", -42, 8, 9 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPacer(DefaultLimits)
				start := time.Now()
				for range c.n {
					waitRetrying(t, p, c.chat)
				}
				if got := time.Since(start); got < c.want-time.Millisecond || got > c.want+time.Millisecond {
					t.Errorf("%d sends took %v, want %v", c.n, got, c.want)
				}
			})
		})
	}
}

func TestPacingGlobal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(DefaultLimits)
		start := time.Now()
		for chat := range int64(31) {
			if err := p.wait(context.Background(), chat+1); err != nil {
				t.Fatal(err)
			}
		}
		// 30 distinct chats pass at once; the 31st waits for the bucket.
		if got := time.Since(start); got <= 0 || got > 100*time.Millisecond {
			t.Errorf("31 sends to distinct chats took %v", got)
		}
	})
}

func TestPacingHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(DefaultLimits)
		_ = p.wait(context.Background(), 7)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.wait(ctx, 7); err == nil {
			t.Error("wait ignored a cancelled context")
		}
	})
}

// waitRetrying waits for a turn the way the dispatcher does: a long
// pacing wait comes back as retry_after and the send is tried again then.
func waitRetrying(t *testing.T, p *pacer, chat int64) {
	t.Helper()
	for {
		err := p.wait(context.Background(), chat)
		var paced *pacedError
		if errors.As(err, &paced) {
			time.Sleep(paced.wait)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

func TestLongPacingWaitReturnsInsteadOfBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPacer(DefaultLimits)
		for range 8 { // the burst, then one every 3 s
			waitRetrying(t, p, -42)
		}
		start := time.Now()
		err := p.wait(context.Background(), -42)
		var paced *pacedError
		if !errors.As(err, &paced) || paced.wait <= maxPaceWait {
			t.Fatalf("err %v, want a pacing wait over %v", err, maxPaceWait)
		}
		if time.Since(start) != 0 {
			t.Fatal("a long pacing wait blocked the worker")
		}
	})
}
