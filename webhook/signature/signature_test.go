package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official Standard Webhooks test vector (identical across the
// reference libraries).
const (
	vecSecret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS      = 1614265330
	vecPayload = `{"test": 2432232314}`
	vecSig     = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	wrongSig   = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

func vecKey(t testing.TB) []byte {
	t.Helper()
	k, err := ParseSecret(vecSecret)
	if err != nil {
		t.Fatalf("ParseSecret: %v", err)
	}
	return k
}

func TestSignOfficialVector(t *testing.T) {
	key := vecKey(t)
	if len(key) != 24 {
		t.Fatalf("key length = %d, want 24", len(key))
	}
	got := Sign(key, vecID, time.Unix(vecTS, 0), []byte(vecPayload))
	if got != vecSig {
		t.Fatalf("Sign = %q, want %q", got, vecSig)
	}
}

func TestParseSecret(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
		wantLen int
	}{
		{"prefixed", vecSecret, nil, 24},
		{"bare base64", strings.TrimPrefix(vecSecret, SecretPrefix), nil, 24},
		{"unpadded", "whsec_dGVzdA", nil, 4},
		{"empty", "", ErrEmptySecret, 0},
		{"prefix only", "whsec_", ErrEmptySecret, 0},
		{"spaces", "   ", ErrEmptySecret, 0},
		{"not base64", "whsec_not*base64!secretvalue", ErrBadSecret, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseSecret(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if v := strings.TrimSpace(strings.TrimPrefix(tt.in, SecretPrefix)); v != "" && strings.Contains(err.Error(), v) {
					t.Fatalf("error echoes the secret: %v", err)
				}
				return
			}
			if len(k) != tt.wantLen {
				t.Fatalf("len = %d, want %d", len(k), tt.wantLen)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	key := vecKey(t)
	other := []byte("another-key-of-24-bytes!")
	body := []byte(vecPayload)
	ts := strconv.Itoa(vecTS)
	// now carries a fractional second, as a real clock does.
	now := time.Unix(vecTS, 250_000_000)

	tests := []struct {
		name    string
		keys    [][]byte
		id, ts  string
		sig     string
		body    []byte
		now     time.Time
		wantErr error
	}{
		{"official vector", [][]byte{key}, vecID, ts, vecSig, body, now, nil},
		{"wrong signature", [][]byte{key}, vecID, ts, wrongSig, body, now, ErrNoMatch},
		{"partial v1 entry", [][]byte{key}, vecID, ts, "v1,", body, now, ErrNoMatch},
		{"version only", [][]byte{key}, vecID, ts, "v1", body, now, ErrNoMatch},
		{"multi with v2 entry", [][]byte{key}, vecID, ts, "v2,abc= " + vecSig, body, now, nil},
		{"multi wrong then right", [][]byte{key}, vecID, ts, wrongSig + " " + vecSig, body, now, nil},
		{"v2 only carries the right bytes", [][]byte{key}, vecID, ts, "v2," + strings.TrimPrefix(vecSig, "v1,"), body, now, ErrNoMatch},
		{"v1a ignored", [][]byte{key}, vecID, ts, "v1a," + strings.TrimPrefix(vecSig, "v1,"), body, now, ErrNoMatch},
		{"rotation: old key first", [][]byte{other, key}, vecID, ts, vecSig, body, now, nil},
		{"rotation: new key first", [][]byte{key, other}, vecID, ts, vecSig, body, now, nil},
		{"other key only", [][]byte{other}, vecID, ts, vecSig, body, now, ErrNoMatch},
		{"no keys", nil, vecID, ts, vecSig, body, now, ErrNoMatch},
		{"empty key never matches", [][]byte{{}}, vecID, ts, Sign(nil, vecID, time.Unix(vecTS, 0), body), body, now, ErrNoMatch},
		{"tampered body", [][]byte{key}, vecID, ts, vecSig, []byte(`{"test": 2432232315}`), now, ErrNoMatch},
		{"tampered id", [][]byte{key}, "msg_other", ts, vecSig, body, now, ErrNoMatch},
		{"too old: now-5min", [][]byte{key}, vecID, ts, vecSig, body, now.Add(5 * time.Minute), ErrTooOld},
		{"too old: now-5min-1s", [][]byte{key}, vecID, ts, vecSig, body, time.Unix(vecTS, 0).Add(5*time.Minute + time.Second), ErrTooOld},
		{"old within tolerance", [][]byte{key}, vecID, ts, vecSig, body, time.Unix(vecTS, 0).Add(5*time.Minute - time.Second), nil},
		{"too new: now+5min+1s", [][]byte{key}, vecID, ts, vecSig, body, time.Unix(vecTS, 0).Add(-5*time.Minute - time.Second), ErrTooNew},
		{"new within tolerance", [][]byte{key}, vecID, ts, vecSig, body, time.Unix(vecTS, 0).Add(-5 * time.Minute), nil},
		{"missing id", [][]byte{key}, "", ts, vecSig, body, now, ErrMissingHeaders},
		{"missing timestamp", [][]byte{key}, vecID, "", vecSig, body, now, ErrMissingHeaders},
		{"missing signature", [][]byte{key}, vecID, ts, "", body, now, ErrMissingHeaders},
		{"timestamp not a number", [][]byte{key}, vecID, "16142653x0", vecSig, body, now, ErrBadHeaders},
		{"timestamp signed", [][]byte{key}, vecID, "+" + ts, vecSig, body, now, ErrBadHeaders},
		{"timestamp in ms", [][]byte{key}, vecID, ts + "000", vecSig, body, now, ErrTooNew},
		{"dot in id, signed without it", [][]byte{key}, "msg.1", ts, vecSig, body, now, ErrNoMatch},
		{"control character in id", [][]byte{key}, "msg\x01", ts, vecSig, body, now, ErrBadHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.keys, tt.id, tt.ts, tt.sig, tt.body, tt.now, DefaultTolerance)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	key := []byte("0123456789abcdef01234567")
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	body := []byte(`{"type":"test","id":"k1"}`)
	sig := Sign(key, "k1", now, body)
	if err := Verify([][]byte{key}, "k1", strconv.FormatInt(now.Unix(), 10), sig, body, now, DefaultTolerance); err != nil {
		t.Fatalf("Verify(Sign) = %v", err)
	}
}

func TestVerifyGitHub(t *testing.T) {
	secret := []byte("It's a Secret to Everybody")
	body := []byte("Hello, World!")
	const docSig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := SignGitHub(secret, body); got != docSig {
		t.Fatalf("SignGitHub = %q, want %q", got, docSig)
	}
	tests := []struct {
		name    string
		secrets [][]byte
		header  string
		body    []byte
		wantErr error
	}{
		{"doc vector", [][]byte{secret}, docSig, body, nil},
		{"uppercase hex", [][]byte{secret}, "sha256=" + strings.ToUpper(strings.TrimPrefix(docSig, "sha256=")), body, nil},
		{"rotation", [][]byte{[]byte("old"), secret}, docSig, body, nil},
		{"wrong secret", [][]byte{[]byte("nope")}, docSig, body, ErrNoMatch},
		{"tampered body", [][]byte{secret}, docSig, []byte("Hello, World?"), ErrNoMatch},
		{"missing", [][]byte{secret}, "", body, ErrMissingHeaders},
		{"sha1 legacy", [][]byte{secret}, "sha1=0123456789abcdef0123456789abcdef01234567", body, ErrBadHeaders},
		{"not hex", [][]byte{secret}, "sha256=zz", body, ErrBadHeaders},
		{"short", [][]byte{secret}, "sha256=7571", body, ErrBadHeaders},
		{"empty secret never matches", [][]byte{{}}, SignGitHub(nil, body), body, ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := VerifyGitHub(tt.secrets, tt.header, tt.body); !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifyGitHub = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// FuzzVerify feeds arbitrary header values to Verify: it must never
// panic, and must accept only what Sign produced for the same content.
func FuzzVerify(f *testing.F) {
	ts := strconv.Itoa(vecTS)
	f.Add(vecID, ts, vecSig, []byte(vecPayload))
	f.Add(vecID, ts, "v1,", []byte(vecPayload))
	f.Add(vecID, ts, "v2,abc "+vecSig, []byte(vecPayload))
	f.Add("msg.1", "-1", "v1,,,, v1", []byte{})
	f.Add("", "99999999999999999999", "  ", []byte("x"))
	key := vecKey(f)
	now := time.Unix(vecTS, 0)
	f.Fuzz(func(t *testing.T, id, tsHeader, sigHeader string, body []byte) {
		err := Verify([][]byte{key}, id, tsHeader, sigHeader, body, now, DefaultTolerance)
		if err != nil {
			return
		}
		// Accepted: the header must hold the signature Sign computes.
		n, _ := strconv.ParseInt(tsHeader, 10, 64)
		want := Sign(key, id, time.Unix(n, 0), body)
		if !containsEquivalent(sigHeader, want) {
			t.Fatalf("accepted %q without the right signature %q", sigHeader, want)
		}
	})
}

// containsEquivalent reports whether some whitespace-separated entry of
// header equals want (Fields splits on any Unicode space).
func containsEquivalent(header, want string) bool {
	for _, e := range strings.Fields(header) {
		if e == want {
			return true
		}
	}
	return false
}

// FuzzVerifyGitHub: arbitrary X-Hub-Signature-256 values never panic and
// are accepted only when they carry the body's HMAC.
func FuzzVerifyGitHub(f *testing.F) {
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []byte("Hello, World!"))
	f.Add("sha256=", []byte{})
	f.Add("sha1=abc", []byte("x"))
	secret := []byte("It's a Secret to Everybody")
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if VerifyGitHub([][]byte{secret}, header, body) == nil &&
			!strings.EqualFold(header, SignGitHub(secret, body)) {
			t.Fatalf("accepted %q for the wrong body", header)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	key := vecKey(b)
	body := []byte(strings.Repeat(`{"id":"n1","title":"Exam moved","change":"new"},`, 40))
	now := time.Unix(vecTS, 0)
	sig := Sign(key, vecID, now, body)
	ts := strconv.Itoa(vecTS)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify([][]byte{key}, vecID, ts, "v2,x "+sig, body, now, DefaultTolerance); err != nil {
			b.Fatal(err)
		}
	}
}

// Ids with dots are valid Standard Webhooks ids: a delivery signed over
// "evt.2026.12.01.1.<ts>.<body>" verifies (the signature computed here
// independently of Sign).
func TestVerify_IDsWithDots(t *testing.T) {
	key := []byte("a-shared-secret-of-24-by")
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	body := []byte(`{"type":"invoice.paid"}`)
	for _, id := range []string{"evt.2026.12.01.1", "msg_2Kx.9", "a.b", ".", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + strconv.FormatInt(now.Unix(), 10) + "." + string(body)))
		sig := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
		if err := Verify([][]byte{key}, id, strconv.FormatInt(now.Unix(), 10), sig, body, now, DefaultTolerance); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
		if got := Sign(key, id, now, body); got != sig {
			t.Errorf("id %q: Sign = %s, want %s", id, got, sig)
		}
	}
}

// What the headers alone can show is checked without the body, with the
// same answers Verify gives.
func TestCheckHeaders_WithoutTheBody(t *testing.T) {
	now := time.Unix(vecTS, 0)
	ts := strconv.FormatInt(vecTS, 10)
	cases := []struct {
		name        string
		id, ts, sig string
		want        error
	}{
		{"all present and fresh", vecID, ts, "v1,anything", nil},
		{"no id", "", ts, "v1,x", ErrMissingHeaders},
		{"no timestamp", vecID, "", "v1,x", ErrMissingHeaders},
		{"no signature", vecID, ts, "", ErrMissingHeaders},
		{"control character in id", "a\nb", ts, "v1,x", ErrBadHeaders},
		{"timestamp not digits", vecID, "-5", "v1,x", ErrBadHeaders},
		{"too old", vecID, strconv.FormatInt(vecTS-301, 10), "v1,x", ErrTooOld},
		{"too new", vecID, strconv.FormatInt(vecTS+301, 10), "v1,x", ErrTooNew},
	}
	for _, c := range cases {
		if err := CheckHeaders(c.id, c.ts, c.sig, now, DefaultTolerance); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	good := "sha256=" + strings.Repeat("ab", sha256.Size)
	for sig, want := range map[string]error{
		good:                   nil,
		"":                     ErrMissingHeaders,
		"sha1=" + good[7:]:     ErrBadHeaders,
		"sha256=zz":            ErrBadHeaders,
		"sha256=" + good[7:69]: ErrBadHeaders,
	} {
		if err := CheckGitHubHeader(sig); !errors.Is(err, want) {
			t.Errorf("CheckGitHubHeader(%q) = %v, want %v", sig, err, want)
		}
	}
}
