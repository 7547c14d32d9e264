package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// tokenPath is the self-built app's tenant_access_token endpoint.
const tokenPath = "/open-apis/auth/v3/tenant_access_token/internal"

// tokenMargin is how long before its stated expiry a token is replaced.
const tokenMargin = 3 * time.Minute

// Token errors, classified by Send.
var (
	// ErrTokenRejected: the platform refused the app's credentials.
	ErrTokenRejected = errors.New("feishu: tenant token request rejected")
	// ErrTokenUnavailable: the token endpoint failed or answered garbage.
	ErrTokenUnavailable = errors.New("feishu: tenant token unavailable")
)

// tokens owns the tenant_access_token of one app. The SDK's cache is
// process-global and cannot drop a token the platform has declared
// invalid, so the sink keeps its own.
type tokens struct {
	base, appID, appSecret string
	client                 *http.Client
	now                    func() time.Time

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

type tokenAnswer struct {
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
	Token  string `json:"tenant_access_token"`
	Expire int    `json:"expire"` // seconds
}

// get returns a valid token, fetching one when none is cached or the cached
// one is within tokenMargin of expiry.
func (t *tokens) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.renewAt) {
		return t.token, nil
	}
	tok, ttl, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.token, t.renewAt = tok, t.now().Add(ttl-tokenMargin)
	return tok, nil
}

// drop forgets tok if it is still the cached token, so the next get
// fetches a fresh one.
func (t *tokens) drop(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == tok {
		t.token = ""
	}
}

func (t *tokens) fetch(ctx context.Context) (string, time.Duration, error) {
	body, err := json.Marshal(map[string]string{"app_id": t.appID, "app_secret": t.appSecret})
	if err != nil {
		return "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+tokenPath, bytes.NewReader(body))
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrTokenUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrTokenUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", 0, fmt.Errorf("%w: read: %w", ErrTokenUnavailable, err)
	}
	var a tokenAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", 0, fmt.Errorf("%w: http %d, undecodable answer", ErrTokenUnavailable, resp.StatusCode)
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return "", 0, fmt.Errorf("%w: http %d code %d", ErrTokenUnavailable, resp.StatusCode, a.Code)
	case a.Code != 0:
		return "", 0, fmt.Errorf("%w: code %d", ErrTokenRejected, a.Code)
	case a.Token == "" || a.Expire <= 0:
		return "", 0, fmt.Errorf("%w: answer without token", ErrTokenUnavailable)
	}
	ttl := time.Duration(a.Expire) * time.Second
	if ttl <= tokenMargin {
		// A token about to expire is still good for this request.
		ttl = tokenMargin + time.Second
	}
	return a.Token, ttl, nil
}
