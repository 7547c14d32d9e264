package telegram

import (
	"context"
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
					if err := p.wait(context.Background(), c.chat); err != nil {
						t.Fatal(err)
					}
				}
				if got := time.Since(start); got != c.want {
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
