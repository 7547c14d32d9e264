package console

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store/bolt"
)

func newSessions(t *testing.T) (*Sessions, *time.Time) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	return &Sessions{KV: st.Channels(), Dedup: st.Dedup(), Now: func() time.Time { return now }}, &now
}

func TestSessions_CodeWorksOnceAndOnlyBeforeItExpires(t *testing.T) {
	ctx := context.Background()
	s, now := newSessions(t)

	code, exp, err := s.NewCode(ctx, "console:admin", time.Minute)
	if err != nil || !strings.HasPrefix(code, codePrefix) || !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("NewCode = %q %v %v", code, exp, err)
	}
	tok, sess, err := s.Exchange(ctx, code)
	if err != nil || sess.Principal != "console:admin" || sess.CSRF == "" || !strings.HasPrefix(tok, sessionPrefix) {
		t.Fatalf("Exchange = %q %+v %v", tok, sess, err)
	}
	if _, _, err := s.Exchange(ctx, code); !errors.Is(err, ErrBadCode) {
		t.Errorf("a code used twice: %v", err)
	}
	if got, err := s.Lookup(ctx, tok); err != nil || got.CSRF != sess.CSRF {
		t.Errorf("Lookup = %+v %v", got, err)
	}

	late, _, _ := s.NewCode(ctx, "console:admin", time.Minute)
	*now = now.Add(time.Minute)
	if _, _, err := s.Exchange(ctx, late); !errors.Is(err, ErrBadCode) {
		t.Errorf("an expired code: %v", err)
	}
	for _, bad := range []string{"", "hcc_", "hcs_" + tok[4:], tok, strings.Repeat("hcc_x", 40)} {
		if _, _, err := s.Exchange(ctx, bad); !errors.Is(err, ErrBadCode) {
			t.Errorf("Exchange(%.12q): %v", bad, err)
		}
	}
}

func TestSessions_ExpireEndAndRevokeAll(t *testing.T) {
	ctx := context.Background()
	s, now := newSessions(t)
	open := func() string {
		t.Helper()
		code, _, err := s.NewCode(ctx, "console:admin", 0)
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := s.Exchange(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	a, b := open(), open()
	if err := s.End(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, a); !errors.Is(err, ErrNoSession) {
		t.Errorf("an ended session: %v", err)
	}
	if _, err := s.Lookup(ctx, b); err != nil {
		t.Errorf("ending one session ended another: %v", err)
	}

	pending, _, _ := s.NewCode(ctx, "console:admin", 0)
	if err := s.RevokeAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, b); !errors.Is(err, ErrNoSession) {
		t.Errorf("a session after RevokeAll: %v", err)
	}
	if _, _, err := s.Exchange(ctx, pending); !errors.Is(err, ErrBadCode) {
		t.Errorf("a code issued before RevokeAll: %v", err)
	}

	c := open()
	*now = now.Add(SessionTTL)
	if _, err := s.Lookup(ctx, c); !errors.Is(err, ErrNoSession) {
		t.Errorf("a session past its lifetime: %v", err)
	}
}

func TestScrubKeepsNoQueryOrUserInfo(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@cal.example.edu/export.ics?token=abc#x": "https://cal.example.edu/export.ics",
		"not a url": "",
	} {
		if got := scrubURL(in); got != want {
			t.Errorf("scrubURL(%q) = %q, want %q", in, got, want)
		}
	}
	got := scrubText("fetch https://cal.example.edu/x.ics?token=abc: auth: HTTP 401")
	if strings.Contains(got, "token") || !strings.Contains(got, "https://cal.example.edu/x.ics") {
		t.Errorf("scrubText = %q", got)
	}
}
