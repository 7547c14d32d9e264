package configs

import (
	"strings"
	"testing"
	"time"
)

func TestStoreRetention_DefaultAndBoundsWithLine(t *testing.T) {
	cfg, err := loadString(t, "server: {listen: 127.0.0.1:8080}\n", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Retention.D() != 30*24*time.Hour {
		t.Fatalf("default retention = %v", cfg.Store.Retention.D())
	}
	cfg, err = loadString(t, "store:\n  retention: 7d\n", noEnv)
	if err != nil || cfg.Store.Retention.D() != 7*24*time.Hour {
		t.Fatalf("set = %v, %v", cfg.Store.Retention.D(), err)
	}
	for _, src := range []string{"store:\n  retention: 30s\n", "store:\n  retention: 87700h\n"} {
		_, err = loadString(t, src, noEnv)
		if want := "herald.yaml:2: store.retention: must be between 1m and 3650d"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v lacks %q", src, err, want)
		}
	}
}
