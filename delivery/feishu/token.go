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

	lark "github.com/larksuite/oapi-sdk-go/v3"

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

// FetchTimeout bounds one token request. A fetch runs detached from the
// caller that started it, so it needs its own bound.
const FetchTimeout = DefaultTimeout

// TokenSource owns the tenant_access_token of one app. The SDK's cache is
// process-global and cannot drop a token the platform has declared
// invalid, so herald keeps its own: one per app, shared by everything that
// calls the platform as that app (the chat channel and the delivery sink),
// so the app has one token and one refresh schedule.
//
// Concurrent callers that find no usable token share one fetch. The fetch
// runs on the source's own HTTP client and is not tied to the context of
// the caller that started it: a caller that gives up returns at once
// without failing the others, and the answer is cached for the next.
// It is safe for concurrent use; its errors never carry the app secret or
// a token (I10).
type TokenSource struct {
	base, appID, appSecret string
	client                 *http.Client
	now                    func() time.Time

	mu      sync.Mutex
	token   string
	renewAt time.Time
	flight  *tokenFlight // the fetch under way, if any
}

// tokenFlight is one fetch that callers wait on together.
type tokenFlight struct {
	done  chan struct{}
	token string
	err   error
}

// NewTokenSource returns the token source of app appID/appSecret on the
// open platform at baseURL (empty: Feishu), fetching with client and
// timing expiry by now (nil: a client with DefaultTimeout, time.Now). It
// makes no request.
func NewTokenSource(appID, appSecret, baseURL string, client *http.Client, now func() time.Time) *TokenSource {
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	if now == nil {
		now = time.Now
	}
	if baseURL == "" {
		baseURL = lark.FeishuBaseUrl
	}
	return &TokenSource{
		base: strings.TrimRight(baseURL, "/"), appID: appID, appSecret: appSecret,
		client: client, now: now,
	}
}

// For reports whether t is the token source of app appID on the open
// platform at baseURL (empty: Feishu). Callers handed a shared source
// check it against their own settings.
func (t *TokenSource) For(appID, baseURL string) bool {
	if baseURL == "" {
		baseURL = lark.FeishuBaseUrl
	}
	return t.appID == appID && t.base == strings.TrimRight(baseURL, "/")
}

type tokenAnswer struct {
	Code   int    `json:"code"`
	Msg    string `json:"msg"`
	Token  string `json:"tenant_access_token"`
	Expire int    `json:"expire"` // seconds
}

// Token returns a valid token, fetching one when none is cached or the
// cached one is within TokenMargin of its stated expiry. Callers arriving
// while a fetch is under way wait for that fetch instead of starting
// another. Errors wrap ErrTokenRejected or ErrTokenUnavailable; when ctx
// ends first, ErrTokenUnavailable and ctx's error.
func (t *TokenSource) Token(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTokenUnavailable, err)
	}
	t.mu.Lock()
	if t.token != "" && t.now().Before(t.renewAt) {
		tok := t.token
		t.mu.Unlock()
		return tok, nil
	}
	f := t.flight
	if f == nil {
		f = &tokenFlight{done: make(chan struct{})}
		t.flight = f
		go t.run(f)
	}
	t.mu.Unlock()
	select {
	case <-f.done:
		return f.token, f.err
	case <-ctx.Done():
		return "", fmt.Errorf("%w: %w", ErrTokenUnavailable, ctx.Err())
	}
}

// run performs the fetch of flight f, caches its token and releases its
// waiters.
func (t *TokenSource) run(f *tokenFlight) {
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	// The stated lifetime counts from when the platform issued the token,
	// which is no earlier than the moment we asked.
	asked := t.now()
	tok, ttl, err := t.fetch(ctx)
	t.mu.Lock()
	if err == nil {
		t.token, t.renewAt = tok, asked.Add(ttl-TokenMargin)
	}
	t.flight = nil
	t.mu.Unlock()
	f.token, f.err = tok, err
	close(f.done)
}

// Drop forgets tok if it is still the cached token, so the next Token
// fetches a fresh one. Callers drop a token the platform answered with a
// code for which IsTokenInvalid holds. Dropping a token that was already
// replaced does nothing, so callers that were refused with the same token
// cause one refetch between them, not one each.
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
