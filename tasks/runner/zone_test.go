package runner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestTimes_NoticeCarriesTheTasksZone: a notice names the zone its times
// belong to: a deadline's own zone (an iCalendar TZID), else the zone the
// schedule names, else none (the recipient's zone then shows them).
func TestTimes_NoticeCarriesTheTasksZone(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, schedule string
		due            time.Time
		want           string
	}{
		{"deadline's own zone", "every 1h", time.Date(2026, 12, 8, 23, 59, 0, 0, ny), "America/New_York"},
		{"schedule's zone", "daily 08:00 Europe/Berlin", time.Date(2026, 12, 8, 23, 59, 0, 0, time.UTC), "Europe/Berlin"},
		{"deadline's zone over the schedule's", "daily 08:00 Europe/Berlin", time.Date(2026, 12, 8, 23, 59, 0, 0, ny), "America/New_York"},
		{"none", "every 30m", time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := &tasks.Task{ID: "t-1", Schedule: tc.schedule, Notify: []string{"inbox:console:admin"}}
			ev := watch.Event{Kind: watch.EventKind(delivery.ChangeDeadline), Item: watch.Item{ID: "hw", Title: "Essay", Due: tc.due}, Identity: "deadline|hw"}
			effs, err := eventEffects(tk, "run-1", []watch.Event{ev}, now)
			if err != nil || len(effs) != 1 {
				t.Fatalf("eventEffects: %d, %v", len(effs), err)
			}
			var m delivery.Message
			if err := json.Unmarshal(effs[0].Payload, &m); err != nil {
				t.Fatal(err)
			}
			if m.Zone != tc.want {
				t.Errorf("zone %q, want %q", m.Zone, tc.want)
			}
		})
	}
}
