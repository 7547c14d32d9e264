package feishu

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestI10_TokenSourceErrorsCarryNoSecretOrURL(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		secret string
		down   bool
		ctx    context.Context
		want   error
		cause  error
	}{
		{name: "rejected", secret: "wrong-" + appSecret, ctx: context.Background(), want: ErrTokenRejected},
		{name: "endpoint down", secret: appSecret, down: true, ctx: context.Background(), want: ErrTokenUnavailable},
		{name: "canceled", secret: appSecret, ctx: canceled, want: ErrTokenUnavailable, cause: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, newAppID(), nil)
			if tt.down {
				f.srv.Close()
			}
			ts := NewTokenSource(f.appID, tt.secret, f.srv.URL, f.srv.Client(), nil)
			tok, err := ts.Token(tt.ctx)
			if tok != "" || !errors.Is(err, tt.want) {
				t.Fatalf("Token = %q, %v; want %v", tok, err, tt.want)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("err = %v, want cause %v", err, tt.cause)
			}
			for _, s := range []string{appSecret, TokenPath, f.srv.URL} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
		})
	}
}

func TestTokenSourceDropsOnlyTheCachedToken(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	ts := NewTokenSource(f.appID, appSecret, f.srv.URL+"/", f.srv.Client(), nil)
	ctx := context.Background()
	first, err := ts.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.Drop("t-some-older-token")
	if tok, _ := ts.Token(ctx); tok != first {
		t.Fatalf("Token after dropping another token = %q, want %q", tok, first)
	}
	ts.Drop(first)
	second, err := ts.Token(ctx)
	if err != nil || second == first {
		t.Fatalf("Token after Drop = %q, %v; want a fresh token", second, err)
	}
	if n, _ := f.state(); n != 2 {
		t.Errorf("token fetches = %d, want 2", n)
	}
}

func TestTokenSourceShortLivedTokenRenewsAfterOneSecond(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	f.expire = 60 // within TokenMargin: still good for the call at hand
	clk := &clock{t: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	ts := NewTokenSource(f.appID, appSecret, f.srv.URL, &http.Client{Timeout: time.Second}, clk.now)
	ctx := context.Background()
	for _, step := range []struct {
		advance time.Duration
		fetches int
	}{{0, 1}, {999 * time.Millisecond, 1}, {time.Millisecond, 2}} {
		clk.add(step.advance)
		if _, err := ts.Token(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := f.state(); n != step.fetches {
			t.Fatalf("after +%v: fetches = %d, want %d", step.advance, n, step.fetches)
		}
	}
}

func TestIsTokenInvalid(t *testing.T) {
	tests := []struct {
		code int
		want bool
	}{
		{99991663, true}, {99991664, true}, {99991671, true}, {99991661, true}, {99991668, true},
		{0, false}, {99991400, false}, {230002, false}, {10014, false},
	}
	for _, tt := range tests {
		if got := IsTokenInvalid(tt.code); got != tt.want {
			t.Errorf("IsTokenInvalid(%d) = %v, want %v", tt.code, got, tt.want)
		}
	}
}

// gateTokens makes f hold token requests until the returned release is
// called; hit receives as each request arrives.
func gateTokens(f *fakeFeishu) (hit <-chan struct{}, release func()) {
	gate, h := make(chan struct{}), make(chan struct{}, 64)
	f.mu.Lock()
	f.tokenGate, f.tokenHit = gate, h
	f.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	return h, release
}

func TestTokenSourceConcurrentCallersShareOneFetch(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	hit, release := gateTokens(f)
	defer release()
	ts := NewTokenSource(f.appID, appSecret, f.srv.URL, nil, nil)
	const callers = 16
	var started, done sync.WaitGroup
	toks := make([]string, callers)
	errs := make([]error, callers)
	started.Add(callers)
	done.Add(callers)
	for i := range callers {
		go func() {
			defer done.Done()
			started.Done()
			toks[i], errs[i] = ts.Token(context.Background())
		}()
	}
	<-hit // the first fetch is on the wire and held there
	started.Wait()
	release()
	done.Wait()
	for i := range callers {
		if errs[i] != nil || toks[i] != toks[0] || toks[0] == "" {
			t.Fatalf("caller %d: %q, %v; caller 0: %q", i, toks[i], errs[i], toks[0])
		}
	}
	if n, _ := f.state(); n != 1 {
		t.Errorf("token fetches = %d for %d concurrent callers, want 1", n, callers)
	}
}

func TestTokenSourceFetchOutlivesTheCallerThatStartedIt(t *testing.T) {
	f := newFake(t, newAppID(), nil)
	hit, release := gateTokens(f)
	defer release()
	ts := NewTokenSource(f.appID, appSecret, f.srv.URL, nil, nil)

	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := ts.Token(first)
		firstErr <- err
	}()
	<-hit // the fetch it started is held at the platform

	second := make(chan string, 1)
	go func() {
		tok, err := ts.Token(context.Background())
		if err != nil {
			t.Errorf("second caller: %v", err)
		}
		second <- tok
	}()
	cancel()
	if err := <-firstErr; !errors.Is(err, ErrTokenUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled caller got %v, want ErrTokenUnavailable and context.Canceled", err)
	}
	release()
	if tok := <-second; tok == "" {
		t.Fatal("the waiting caller got no token")
	}
	// The answer is cached: nobody fetches again.
	if _, err := ts.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.state(); n != 1 {
		t.Errorf("token fetches = %d, want 1", n)
	}
}
