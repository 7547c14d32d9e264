package render

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
)

// TestTimes_DeadlineStaysInItsTasksZone: a deadline due at 23:59 in New
// York is shown as 23:59 EST with its zone, to a recipient whose own zone
// is UTC or Shanghai, in both languages; a message naming no zone keeps
// the recipient's, with its zone shown too.
func TestTimes_DeadlineStaysInItsTasksZone(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	sh, _ := time.LoadLocation("Asia/Shanghai")
	due := time.Date(2026, 12, 8, 23, 59, 0, 0, ny)
	now := due.Add(-24 * time.Hour)
	msg := func(zone string) delivery.Message {
		return delivery.Message{Kind: delivery.KindDeadline, TaskName: "Homework", Zone: zone, OccurredAt: now,
			Items: []delivery.Item{{ID: "hw1", Title: "Essay", Change: delivery.ChangeDeadline, Due: due.UTC()}}}
	}
	for _, tc := range []struct {
		name, zone, lang string
		recipient        *time.Location
		want, not        string
	}{
		{"task zone over UTC recipient", "America/New_York", "en", time.UTC, "23:59 EST", "04:59"},
		{"task zone over Shanghai recipient", "America/New_York", "zh", sh, "23:59 EST", "12:59"},
		{"no task zone: the recipient's", "", "en", time.UTC, "04:59 UTC", "23:59"},
		{"unknown zone: the recipient's", "Mars/Olympus", "en", time.UTC, "04:59 UTC", "23:59"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(msg(tc.zone), tc.lang, tc.recipient, now)
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
				t.Errorf("want %q and not %q in:\n%s", tc.want, tc.not, got)
			}
		})
	}
}
