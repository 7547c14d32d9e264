package tasks

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks/source"
)

// destinationManager is a manager under policy allowPrivate whose name
// lookups answer from names (a name not there fails to resolve; "slow."
// names wait for the lookup's deadline).
func destinationManager(t *testing.T, allowPrivate bool, names map[string]string) *Manager {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := New(Options{
		Store: st, Clock: NewManualClock(t0), Log: zerolog.Nop(),
		Policy: Policy{Admins: []string{"console:admin"}, Requesters: []string{"console:*"}, AllowPrivate: allowPrivate, Named: map[string]bool{}},
		Resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if strings.HasPrefix(host, "slow.") {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			a, ok := names[host]
			if !ok {
				return nil, errors.New("no such host")
			}
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSubmitRefusesWhatTheFirstRunWould: a request for a source the
// address guard refuses fails at once with the run's own words — a
// literal address judged as written, a name by what it resolves to — and
// cloud metadata stays refused with private networks allowed.
func TestSubmitRefusesWhatTheFirstRunWould(t *testing.T) {
	names := map[string]string{"intranet.example.edu": "10.1.2.3", "news.example.edu": "93.184.216.34", "meta.example.edu": "169.254.169.254"}
	strict := destinationManager(t, false, names)
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080/feed":         "127.0.0.1 is a loopback address; set policy.allow_private_networks for local sources",
		"https://intranet.example.edu/feed":  "intranet.example.edu resolves to a private network address; set policy.allow_private_networks for local sources",
		"https://news.example.edu:8443/feed": "port 8443 of news.example.edu is not allowed: sources use ports 80 and 443 unless policy.allow_private_networks is set",
		"https://[fd00:ec2::254]/latest/":    "fd00:ec2::254 is a private network address",
		"https://meta.example.edu/latest/":   "meta.example.edu resolves to a link-local address",
	} {
		_, err := strict.Submit(context.Background(), Submission{Principal: "console:admin", URL: raw})
		var ue *UserError
		if !errors.As(err, &ue) || !errors.Is(err, ErrInvalid) || !strings.Contains(ue.Msg, want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
			continue
		}
		// The same words as the run's refusal.
		u, _ := url.Parse(raw)
		if run := source.Refusal(context.Background(), u, false, strict.o.Resolve); run == nil || run.Error() != ue.Msg {
			t.Errorf("%s: refused as %q, a run says %v", raw, ue.Msg, run)
		}
	}
	for _, raw := range []string{"https://news.example.edu/feed", "https://unknown.example.edu/feed"} {
		if _, err := strict.Submit(context.Background(), Submission{Principal: "console:admin", URL: raw}); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}

	open := destinationManager(t, true, names)
	for _, raw := range []string{"http://127.0.0.1:8080/feed", "https://intranet.example.edu:8443/feed"} {
		if _, err := open.Submit(context.Background(), Submission{Principal: "console:admin", URL: raw}); err != nil {
			t.Errorf("private allowed: %s: %v", raw, err)
		}
	}
	for _, raw := range []string{"http://169.254.169.254/latest/meta-data/", "https://[fd00:ec2::254]/", "https://meta.example.edu/"} {
		_, err := open.Submit(context.Background(), Submission{Principal: "console:admin", URL: raw})
		if err == nil || !strings.Contains(err.Error(), "cloud metadata address") {
			t.Errorf("private allowed: %s: %v, want the metadata refusal", raw, err)
		}
	}
}

// TestSubmitLookupIsBounded: a name whose lookup hangs holds the request
// no longer than the lookup bound, and is not refused for it.
func TestSubmitLookupIsBounded(t *testing.T) {
	m := destinationManager(t, false, nil)
	start := time.Now()
	if _, err := m.Submit(context.Background(), Submission{Principal: "console:admin", URL: "https://slow.example.edu/feed"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > lookupTimeout+2*time.Second {
		t.Fatalf("the request waited %v", d)
	}
}
