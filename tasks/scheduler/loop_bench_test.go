package scheduler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/schedule"
)

// BenchmarkNextWake100k measures the scheduling loop's core for 100,000
// tasks: compute each task's next check from its schedule and keep the
// wake-ups in the heap, then drain what is due.
func BenchmarkNextWake100k(b *testing.B) {
	const n = 100_000
	zone, _ := time.LoadLocation("Asia/Shanghai")
	texts := []string{"every 30m", "every 1h", "daily 08:00", "daily 23:30 America/New_York", "cron 0 9 * * 1-5"}
	scheds := make([]schedule.Schedule, n)
	ids := make([]string, n)
	for i := range scheds {
		s, err := schedule.Parse(texts[i%len(texts)], zone)
		if err != nil {
			b.Fatal(err)
		}
		scheds[i], ids[i] = s, fmt.Sprintf("t-%06d", i)
	}
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := &planner{gen: make(map[string]uint64, n)}
		for i, s := range scheds {
			next, err := s.Next(now)
			if err != nil {
				b.Fatal(err)
			}
			p.plan(ids[i], next, time.Time{})
		}
		if len(p.due(now.Add(31*time.Minute), n)) == 0 {
			b.Fatal("nothing due")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/task")
}

// BenchmarkPlannedTaskMemory100k measures what scheduling holds per idle
// task: its wake-up in the heap and its generation, after planning
// 100,000 tasks.
func BenchmarkPlannedTaskMemory100k(b *testing.B) {
	const n = 100_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t-%06x", i)
	}
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	var per float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := &planner{gen: map[string]uint64{}}
		for i, id := range ids {
			p.plan(id, now.Add(time.Duration(i)*time.Second), time.Time{})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(p)
	}
	b.ReportMetric(per, "B/task")
}
