package delivery

import (
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/schedule"
)

// TestDigestPlan_FiresOnAGridEveryoneAgreesOn: the next fire of a digest
// schedule does not depend on when it is asked within a window, so every
// notice, replica and restart holds for the same one; an `at` digest
// fires once.
func TestDigestPlan_FiresOnAGridEveryoneAgreesOn(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		schedule string
		asked    []string
		want     string // "" : no next fire
	}{
		{"every 6h", []string{"2026-12-01T00:00:00Z", "2026-12-01T03:17:00Z", "2026-12-01T05:59:59Z"}, "2026-12-01T06:00:00Z"},
		{"every 30m", []string{"2026-12-01T10:30:00Z", "2026-12-01T10:45:10Z"}, "2026-12-01T11:00:00Z"},
		{"daily 20:00", []string{"2026-12-01T11:59:00Z", "2026-12-01T00:00:00+08:00"}, "2026-12-01T20:00:00+08:00"},
		{"at 2026-12-01T09:00:00Z", []string{"2026-12-01T08:59:00Z"}, "2026-12-01T09:00:00Z"},
		{"at 2026-12-01T09:00:00Z", []string{"2026-12-01T09:00:00Z"}, ""},
	} {
		s, err := schedule.Parse(tc.schedule, shanghai)
		if err != nil {
			t.Fatal(err)
		}
		p := DigestPlan{Schedule: s}
		for _, a := range tc.asked {
			got, ok := p.next(at(a))
			switch {
			case tc.want == "" && ok:
				t.Errorf("%s asked at %s: next %s, want none", tc.schedule, a, got)
			case tc.want != "" && (!ok || !got.Equal(at(tc.want))):
				t.Errorf("%s asked at %s: next %s (%t), want %s", tc.schedule, a, got, ok, tc.want)
			}
		}
	}
	if max := (DigestPlan{}).maxItems(); max != DefaultDigestMaxItems {
		t.Errorf("default digest_max_items %d, want %d", max, DefaultDigestMaxItems)
	}
}
