package deliverytest

import (
	"testing"

	"github.com/herald-bridge/herald/delivery"
)

func TestNoSecretHelpers(t *testing.T) {
	log, buf := Logger()
	log.Info().Str("reason", "timeout").Msg("send failed")
	NoSecretInLogs(t, buf, "s3cret")
	NoSecretInOutcome(t, delivery.Outcome{Result: delivery.Failed, Reason: "forbidden"}, "s3cret")

	fake := &recorder{}
	NoSecretInOutcome(fake, delivery.Outcome{Reason: "bad token s3cret"}, "s3cret")
	log.Info().Str("url", "https://x/bots3cret/").Msg("oops")
	NoSecretInLogs(fake, buf, "s3cret")
	if fake.errors != 2 {
		t.Errorf("helpers reported %d leaks, want 2", fake.errors)
	}
}

// recorder counts reported failures instead of failing the test.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }
