// Package signature signs and verifies webhook payloads: Standard Webhooks
// (symmetric v1, HMAC-SHA256 over "id.timestamp.body") for outbound and
// inbound hooks, and GitHub's X-Hub-Signature-256 for inbound hooks.
//
// Keys and secrets never appear in the errors returned here.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	// HeaderGitHub carries GitHub's "sha256=<hex>" signature.
	HeaderGitHub = "X-Hub-Signature-256"
)

// SecretPrefix starts a Standard Webhooks symmetric secret.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a timestamp may lie from now, either way.
const DefaultTolerance = 5 * time.Minute

// Sentinel errors; callers test them with errors.Is.
var (
	ErrEmptySecret    = errors.New("webhook secret is empty")
	ErrBadSecret      = errors.New("webhook secret is not whsec_ followed by base64")
	ErrMissingHeaders = errors.New("webhook signature headers missing")
	ErrBadHeaders     = errors.New("webhook signature headers malformed")
	ErrTooOld         = errors.New("webhook timestamp too old")
	ErrTooNew         = errors.New("webhook timestamp too new")
	ErrNoMatch        = errors.New("no matching webhook signature")
)

// ParseSecret decodes a "whsec_<base64>" secret into the HMAC key bytes.
// The prefix may be left out. The secret itself never reaches the error.
func ParseSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), SecretPrefix))
	if s == "" {
		return nil, ErrEmptySecret
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, ErrBadSecret // the decoder's error quotes an offset, never the text; drop it anyway
	}
	if len(key) == 0 {
		return nil, ErrEmptySecret
	}
	return key, nil
}

// Sign returns the Standard Webhooks signature header value "v1,<base64>"
// for the message id, the attempt time ts (unix seconds) and the exact body.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body))
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a Standard Webhooks delivery: the headers webhook-id
// (id), webhook-timestamp (tsHeader) and webhook-signature (sigHeader)
// against body. The timestamp must lie within tolerance of now, either
// way (ErrTooOld, ErrTooNew). The delivery is authentic when any v1 entry
// of the space-separated signature list matches any key (key rotation);
// comparisons are constant time. Entries of other versions are ignored.
func Verify(keys [][]byte, id, tsHeader, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := checkHeaders(id, tsHeader, sigHeader, now, tolerance)
	if err != nil {
		return err
	}
	var want [][]byte
	for _, k := range keys {
		if len(k) > 0 { // an empty key signs nothing: anyone could forge it
			want = append(want, mac(k, id, ts, body))
		}
	}
	for _, entry := range strings.Fields(sigHeader) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" || sig == "" {
			continue
		}
		got, err := base64.StdEncoding.Strict().DecodeString(sig)
		if err != nil || len(got) != sha256.Size {
			continue
		}
		for _, w := range want {
			if hmac.Equal(got, w) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// CheckHeaders checks what a Standard Webhooks delivery's headers show
// without its body: all three are present, the id holds no control
// character, and the timestamp is well formed and within tolerance of
// now. A receiver calls it before reading the body; Verify repeats it.
func CheckHeaders(id, tsHeader, sigHeader string, now time.Time, tolerance time.Duration) error {
	_, err := checkHeaders(id, tsHeader, sigHeader, now, tolerance)
	return err
}

func checkHeaders(id, tsHeader, sigHeader string, now time.Time, tolerance time.Duration) (int64, error) {
	if id == "" || tsHeader == "" || sigHeader == "" {
		return 0, ErrMissingHeaders
	}
	// The specification allows any message id (the official libraries
	// sign and verify "evt.2026.12.01.1"): the signed content is
	// id "." timestamp "." body, and the timestamp is digits only and
	// within the tolerance, so a dot in the id cannot shift the boundary
	// into another valid message. Control characters are refused.
	if strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return 0, ErrBadHeaders
	}
	ts, ok := parseUnix(tsHeader)
	if !ok {
		return 0, ErrBadHeaders
	}
	at := time.Unix(ts, 0)
	if now.Sub(at) > tolerance {
		return 0, ErrTooOld
	}
	if at.Sub(now) > tolerance {
		return 0, ErrTooNew
	}
	return ts, nil
}

// parseUnix accepts only plain decimal digits (no sign, no spaces).
func parseUnix(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// VerifyGitHub checks GitHub's X-Hub-Signature-256 header
// ("sha256=<hex HMAC-SHA256(secret, body)>") against any of secrets, in
// constant time. GitHub signs no timestamp: replay protection must come
// from deduplicating X-GitHub-Delivery.
func VerifyGitHub(secrets [][]byte, sigHeader string, body []byte) error {
	got, err := gitHubSignature(sigHeader)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if len(s) == 0 {
			continue
		}
		h := hmac.New(sha256.New, s)
		h.Write(body)
		if hmac.Equal(got, h.Sum(nil)) {
			return nil
		}
	}
	return ErrNoMatch
}

// CheckGitHubHeader checks, without the body, that sigHeader has the
// shape of an X-Hub-Signature-256 value. VerifyGitHub repeats it.
func CheckGitHubHeader(sigHeader string) error {
	_, err := gitHubSignature(sigHeader)
	return err
}

func gitHubSignature(sigHeader string) ([]byte, error) {
	if sigHeader == "" {
		return nil, ErrMissingHeaders
	}
	hexSig, ok := strings.CutPrefix(sigHeader, "sha256=")
	if !ok {
		return nil, ErrBadHeaders
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return nil, ErrBadHeaders
	}
	return got, nil
}

// SignGitHub returns the X-Hub-Signature-256 header value for body.
func SignGitHub(secret, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return "sha256=" + hex.EncodeToString(h.Sum(nil))
}
