package schedule

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var propertyZones = []string{
	"UTC", "Asia/Shanghai", "America/New_York", "Europe/London", "Australia/Lord_Howe",
	"Pacific/Apia", "America/Santiago", "Asia/Tehran", "Pacific/Chatham", "America/St_Johns",
	"Europe/Dublin", "Africa/Casablanca", "America/Havana", "Asia/Kathmandu", "Antarctica/Troll",
}

// TestNextProperties checks, over random zones, schedules and instants
// from 2000 to 2040, that Next is strictly after its argument and that a
// daily schedule's successive runs fall on distinct local dates.
func TestNextProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i := 0; i < 400; i++ {
		zone := propertyZones[rng.IntN(len(propertyZones))]
		loc := mustZone(t, zone)
		var text string
		switch rng.IntN(3) {
		case 0:
			text = fmt.Sprintf("daily %02d:%02d %s", rng.IntN(24), rng.IntN(60), zone)
		case 1:
			text = fmt.Sprintf("cron %d %d * * * %s", rng.IntN(60), rng.IntN(24), zone)
		default:
			text = fmt.Sprintf("every %dm", 1+rng.IntN(600))
		}
		s := mustParse(t, text, loc)
		at := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(1e9))
		seen := map[string]bool{}
		for j := 0; j < 30; j++ {
			next, err := s.Next(at)
			if err != nil {
				t.Fatalf("%s: Next(%s): %v", s, at, err)
			}
			if !next.After(at) {
				t.Fatalf("%s: Next(%s) = %s, not after", s, at, next)
			}
			if s.Kind() == KindDaily {
				d := next.In(loc).Format("2006-01-02")
				if seen[d] {
					t.Fatalf("%s: two runs on local date %s (second at %s)", s, d, next)
				}
				seen[d] = true
			}
			at = next
		}
	}
}

// TestDailyDistinctDatesAcrossTransitions starts daily schedules close to
// every DST transition of the property zones in 2026 and checks one run per
// local date at every minute-of-day that a gap or overlap touches.
func TestDailyDistinctDatesAcrossTransitions(t *testing.T) {
	for _, zone := range propertyZones {
		loc := mustZone(t, zone)
		p := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		for p.Year() == 2026 {
			_, end := p.ZoneBounds()
			if end.IsZero() || end.Year() != 2026 {
				break
			}
			before := end.Add(-time.Second).In(loc)
			after := end.In(loc)
			for _, w := range []time.Time{before, after} {
				for _, dm := range []int{-30, 0, 15, 30, 59} {
					c := w.Add(time.Duration(dm) * time.Minute)
					s := Daily{Hour: c.Hour(), Minute: c.Minute(), Location: loc}
					at := end.Add(-48 * time.Hour)
					seen := map[string]bool{}
					for j := 0; j < 5; j++ {
						next, err := s.Next(at)
						if err != nil || !next.After(at) {
							t.Fatalf("%s %s: Next(%s) = %s, %v", zone, s, at, next, err)
						}
						d := next.In(loc).Format("2006-01-02")
						if seen[d] {
							t.Fatalf("%s %s: two runs on %s", zone, s, d)
						}
						seen[d] = true
						at = next
					}
				}
			}
			p = end
		}
	}
}
