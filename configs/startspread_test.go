package configs

import (
	"testing"
	"time"
)

// SPEC §18: policy.limits.start_spread defaults to 3 minutes, may be set
// from 1s to 1h, and a value outside is refused at its file and line.
func TestStartSpreadIsABoundedSetting(t *testing.T) {
	cfg, err := loadString(t, "", noEnv)
	if err != nil || time.Duration(cfg.Policy.Limits.StartSpread) != 3*time.Minute {
		t.Fatalf("default start_spread = %v (%v), want 3m", time.Duration(cfg.Policy.Limits.StartSpread), err)
	}
	cfg, err = loadString(t, "policy:\n  limits: {start_spread: 20m}\n", noEnv)
	if err != nil || time.Duration(cfg.Policy.Limits.StartSpread) != 20*time.Minute {
		t.Fatalf("start_spread 20m: %v (%v)", time.Duration(cfg.Policy.Limits.StartSpread), err)
	}
	_, err = loadString(t, "language: en\npolicy:\n  limits:\n    start_spread: 2h\n", noEnv)
	checkProblems(t, "herald.yaml", err, []want{{4, "policy.limits.start_spread: must be between 1s and 1h"}})
}
