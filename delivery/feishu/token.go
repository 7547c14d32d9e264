package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/delivery/egress"
)

// TokenPath is the self-built app's tenant_access_token endpoint.
const TokenPath = "/open-apis/auth/v3/tenant_access_token/internal"

// TokenMargin is how long before its stated expiry a token is replaced.
const TokenMargin = 3 * time.Minute

// Token errors, for callers to classify (the sink: Failed or RetryAfter).
var (
	// ErrTokenRejected: the platform refused the app's credentials.
	ErrTokenRejected = errors.New("feishu: tenant token request rejected")
	// ErrTokenUnavailable: the token endpoint failed or answered garbage.
	ErrTokenUnavailable = errors.New("feishu: tenant token unavailable")
)

// TokenSource owns the tenant_access_token of one app. The SDK's cache is
// process-global and cannot drop a token the platform has declared
// invalid, so herald keeps its own. It is safe for concurrent use; its
// errors never carry the app secret or a token (I10).
type TokenSource struct {
	base, appID, appSecret string
	client                 *http.Client
	now                    func() time.Time

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// NewTokenSource returns the token source of app appID/appSecret on the
// open platform at baseURL, fetching with client and timing expiry by now
// (nil: a client with DefaultTimeout, time.Now). It makes no request.
func NewTokenSource(appID, appSecret, baseURL string, client *http.Client, now func() time.Time) *TokenSource {
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	if now == nil {
		now = time.Now
	}
	return &TokenSource{
		base: strings.TrimRight(baseURL, "/"), appID: appID, appSecret: appSecret,
		client: client, now: now,
	}
}

type tokenAnswer struct {
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
	Token  string `json:"tenant_access_token"`
	Expire int    `json:"expire"` // seconds
}

// Token returns a valid token, fetching one when none is cached or the
// cached one is within TokenMargin of expiry. Errors wrap ErrTokenRejected
// or ErrTokenUnavailable.
func (t *TokenSource) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.renewAt) {
		return t.token, nil
	}
	tok, ttl, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.token, t.renewAt = tok, t.now().Add(ttl-TokenMargin)
	return tok, nil
}

// Drop forgets tok if it is still the cached token, so the next Token
// fetches a fresh one. Callers drop a token the platform answered with a
// code for which IsTokenInvalid holds.
func (t *TokenSource) Drop(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == tok {
		t.token = ""
	}
}

func (t *TokenSource) fetch(ctx context.Context) (string, time.Duration, error) {
	body, err := json.Marshal(map[string]string{"app_id": t.appID, "app_secret": t.appSecret})
	if err != nil {
		return "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+TokenPath, bytes.NewReader(body))
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrTokenUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := t.client.Do(req)
	if err != nil {
		// The cause stays reachable (cancellation, dial errors); the URL
		// is left out of errors that callers may show.
		return "", 0, fmt.Errorf("%w: %w", ErrTokenUnavailable, egress.Redact(err))
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
	if ttl <= TokenMargin {
		// A token about to expire is still good for this request.
		ttl = TokenMargin + time.Second
	}
	return a.Token, ttl, nil
}

// Platform codes for a token that is invalid, expired or missing: the call
// was refused at the gate and nothing was sent.
const (
	codeTenantTokenInvalid = 99991663
	codeAppTokenInvalid    = 99991664
	codeTokenInvalid       = 99991671
	codeTokenMissing       = 99991661
	codeTokenExpired       = 99991668
)

// IsTokenInvalid reports whether code says the token used was invalid,
// expired or missing; the token should be dropped and a new one fetched.
func IsTokenInvalid(code int) bool {
	switch code {
	case codeTenantTokenInvalid, codeAppTokenInvalid, codeTokenInvalid, codeTokenMissing, codeTokenExpired:
		return true
	}
	return false
}
