// Package deliverytest holds helpers shared by the tests of delivery sinks
// and of the tasks that feed them: a recording sink, a dispatcher run until
// the ledger drains, ledger readers, and
// a captured logger with assertions that secrets never leak into outcomes
// or logs (I10).
package deliverytest

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
)

// LogBuffer collects log output; it is safe for concurrent writers.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a debug-level logger that writes JSON into the returned
// buffer.
func Logger() (zerolog.Logger, *LogBuffer) {
	b := &LogBuffer{}
	return zerolog.New(b).Level(zerolog.DebugLevel).With().Timestamp().Logger(), b
}

// NoSecretInOutcome fails t if any secret appears in o's Reason,
// ProviderID or MigratedTo.
func NoSecretInOutcome(t testing.TB, o delivery.Outcome, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for field, v := range map[string]string{"Reason": o.Reason, "ProviderID": o.ProviderID, "MigratedTo": o.MigratedTo} {
			if strings.Contains(v, s) {
				t.Errorf("outcome %s leaks a secret: %q", field, v)
			}
		}
	}
}

// NoSecretInLogs fails t if any secret appears in the captured log.
func NoSecretInLogs(t testing.TB, logs *LogBuffer, secrets ...string) {
	t.Helper()
	out := logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("log output leaks a secret:\n%s", out)
		}
	}
}

// Outcome fails t unless got has the wanted result (and, when set, reason).
func Outcome(t testing.TB, got delivery.Outcome, want delivery.Result, reason string) {
	t.Helper()
	if got.Result != want {
		t.Errorf("result = %v (reason %q), want %v", got.Result, got.Reason, want)
	}
	if reason != "" && got.Reason != reason {
		t.Errorf("reason = %q, want %q", got.Reason, reason)
	}
}
