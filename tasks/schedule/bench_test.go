package schedule

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNext100k computes Next for 100,000 mixed schedules (every,
// daily and cron across zones with and without DST) per iteration.
func BenchmarkNext100k(b *testing.B) {
	const n = 100_000
	zones := []string{"UTC", "Asia/Shanghai", "America/New_York", "Europe/London", "Australia/Lord_Howe"}
	scheds := make([]Schedule, n)
	for i := range scheds {
		zone := zones[i%len(zones)]
		var text string
		switch i % 4 {
		case 0:
			text = fmt.Sprintf("every %dm", 1+i%240)
		case 1, 2:
			text = fmt.Sprintf("daily %02d:%02d %s", i%24, i%60, zone)
		default:
			text = fmt.Sprintf("cron %d */%d * * MON-FRI %s", i%60, 1+i%6, zone)
		}
		s, err := Parse(text, time.UTC)
		if err != nil {
			b.Fatal(err)
		}
		scheds[i] = s
	}
	from := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range scheds {
			if _, err := s.Next(from); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/next")
}
