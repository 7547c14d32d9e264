// Package robot holds what the group-robot sinks (WeCom, DingTalk, Feishu
// custom bots) share: the connection to one hook URL through the guarded
// egress client, pacing by a token bucket in the store, one JSON POST per
// part, the logging of each send without secrets, and the reading of the
// {"errcode","errmsg"} answer WeCom and DingTalk give. Each robot's
// package owns its config, rendering, signing and answer codes.
package robot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store"
)

// Limits shared by both platforms.
const (
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
	// Every and Burst pace one robot to 20 messages in any minute (the
	// platforms' limit): 10 at once, then one every 6 s.
	Every = 6 * time.Second
	Burst = 10
	// TooFastWait is how long to wait after a robot says too fast.
	TooFastWait = time.Minute
	// maxPaceWait is the longest a send waits for a token inside a
	// worker; a longer wait goes back to the ledger as retry_after.
	maxPaceWait = time.Second
	// maxAnswer caps how much of an answer is read.
	maxAnswer = 64 << 10
)

// Code is what one errcode of a platform means.
type Code struct {
	Reason string // short, secret-free
	// TooFast: the robot refused for rate; nothing was sent.
	TooFast bool
	// BadCredential: the key, token or signature is wrong; the recipient
	// is unreachable until the config changes.
	BadCredential bool
	// Gone: the robot's key or token no longer exists (reset, or the
	// robot removed): the recipient is disabled until enabled again.
	Gone bool
}

// Classify maps an HTTP answer of a robot to an outcome. Only HTTP 200
// with errcode 0 is completed; an answer without an errcode may have been
// delivered (unknown).
func Classify(status int, raw []byte, codes map[int]Code) delivery.Outcome {
	var a struct {
		Code *int `json:"errcode"`
	}
	parsed := json.Unmarshal(raw, &a) == nil && a.Code != nil
	switch {
	case status == http.StatusTooManyRequests:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TooFastWait, Reason: "rate_limited"}
	case status >= 500 || status == http.StatusRequestTimeout:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "http_" + strconv.Itoa(status)}
	case status != http.StatusOK:
		return delivery.Outcome{Result: delivery.Failed, Reason: "http_" + strconv.Itoa(status)}
	case !parsed:
		return delivery.Outcome{Result: delivery.Unknown, Reason: "bad_response"}
	case *a.Code == 0:
		return delivery.Outcome{Result: delivery.Completed}
	}
	c, ok := codes[*a.Code]
	switch {
	case !ok:
		return delivery.Outcome{Result: delivery.Failed, Reason: "code_" + strconv.Itoa(*a.Code)}
	case c.TooFast:
		return delivery.Outcome{Result: delivery.RetryAfter, After: TooFastWait, Reason: c.Reason}
	case c.BadCredential:
		return delivery.Outcome{Result: delivery.Failed, Reason: c.Reason, Unreachable: true, Gone: c.Gone}
	}
	return delivery.Outcome{Result: delivery.Failed, Reason: c.Reason}
}

// Codes are the errcodes of a platform with a meaning of their own; any
// other non-zero errcode fails the push.
type Codes map[int]Code

// Classify is Classify by cs.
func (cs Codes) Classify(status int, raw []byte) delivery.Outcome { return Classify(status, raw, cs) }

// post sends body to hook and classifies the answer. The error, for
// logging only, still needs Redact.
func post(ctx context.Context, client *http.Client, hook string, body []byte, classify func(status int, raw []byte) delivery.Outcome) (delivery.Outcome, error) {
	return Exchange(ctx, client, hook, body, "bad_hook", func(status int, _ http.Header, raw []byte) delivery.Outcome {
		return classify(status, raw)
	})
}

// Exchange POSTs body as JSON to u and hands the answer (at most 64 KiB
// of it) to read; badURL is the reason when u makes no request. A guarded
// destination fails, a lost round trip or answer is classified as the
// transport's. The error, for logging only, still needs Redact.
func Exchange(ctx context.Context, client *http.Client, u string, body []byte, badURL string, read func(status int, h http.Header, raw []byte) delivery.Outcome) (delivery.Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return delivery.Outcome{Result: delivery.Failed, Reason: badURL}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := client.Do(req)
	if err != nil {
		return classifyTransport(err), err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		// The request was answered; only the answer was lost.
		return delivery.Outcome{Result: delivery.Unknown, Reason: delivery.ReasonConnLost}, err
	}
	return read(resp.StatusCode, resp.Header, raw), nil
}

// classifyTransport classifies a failed round trip. A destination the
// guard refused is final: nothing was sent, and nothing will be until the
// configuration changes.
func classifyTransport(err error) delivery.Outcome {
	if errors.Is(err, egress.ErrBlocked) || errors.Is(err, egress.ErrBadURL) {
		return delivery.Outcome{Result: delivery.Failed, Reason: "blocked_destination"}
	}
	return delivery.ClassifyTransport(err)
}

// Pacer paces the sends to one robot by a bucket in the store, shared by
// every replica on it.
type Pacer struct {
	buckets store.Buckets
	name    string
	every   time.Duration
	burst   int
	now     func() time.Time
}

// NewPacer paces the robot at hook (kind names the platform). The bucket
// is named by a hash of the hook: never the URL, whose query is a secret.
func NewPacer(b store.Buckets, kind delivery.AddressKind, hook string, now func() time.Time) *Pacer {
	return NewPacerRate(b, kind, hook, now, Every, Burst)
}

// NewPacerRate is NewPacer at another pace: burst sends at once, then
// one every `every`.
func NewPacerRate(b store.Buckets, kind delivery.AddressKind, hook string, now func() time.Time, every time.Duration, burst int) *Pacer {
	sum := sha256.Sum256([]byte(hook))
	return &Pacer{buckets: b, name: string(kind) + ":" + hex.EncodeToString(sum[:16]), every: every, burst: burst, now: now}
}

// Wait takes a token, waiting up to a second for one. When it returns
// false, nothing was sent and out says when to try again.
func (p *Pacer) Wait(ctx context.Context) (out delivery.Outcome, ok bool) {
	if p == nil || p.buckets == nil {
		return delivery.Outcome{}, true
	}
	for try := 0; ; try++ {
		wait, err := p.buckets.Take(ctx, p.name, p.every, p.burst, p.now())
		switch {
		case err != nil:
			return delivery.Outcome{Result: delivery.RetryAfter, After: delivery.NotSentWait, Reason: "store_unavailable"}, false
		case wait == 0:
			return delivery.Outcome{}, true
		case wait > maxPaceWait || try > 0:
			return delivery.Outcome{Result: delivery.RetryAfter, After: max(wait, time.Second), Reason: "paced"}, false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return delivery.Outcome{Result: delivery.RetryAfter, After: time.Second, Reason: delivery.ReasonCanceled}, false
		}
	}
}

// Secrets lists what must never be shown of a robot: its hook URL, each
// value of the URL's query (key=, access_token=) on its own, and the
// other secrets given.
func Secrets(hook string, more ...string) []string {
	out := []string{hook}
	if u, err := url.Parse(hook); err == nil {
		for _, vs := range u.Query() {
			for _, v := range vs {
				if len(v) >= 4 { // a value too short to be a credential would blank out ordinary words
					out = append(out, v, url.QueryEscape(v))
				}
			}
		}
	}
	return append(out, more...)
}

// PathSecrets lists what must never be shown of a webhook URL whose path
// holds the credential (Slack, Discord): the URL, its path, and its last
// path segment (the token) on its own.
func PathSecrets(hook string) []string {
	out := []string{hook}
	if u, err := url.Parse(hook); err == nil {
		if p := strings.Trim(u.Path, "/"); p != "" {
			out = append(out, u.Path)
			if tok := p[strings.LastIndexByte(p, '/')+1:]; len(tok) >= 4 {
				out = append(out, tok)
			}
		}
	}
	return out
}

// Redact renders err for a log line without any of secrets, and without
// the URL of a failed request, whose query is a credential.
func Redact(err error, secrets []string) string {
	return delivery.Redact(egress.Redact(err).Error(), secrets)
}
