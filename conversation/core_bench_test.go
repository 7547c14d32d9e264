package conversation

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkHandle measures one chat turn end to end on a bbolt store:
// dedup mark, language lookup, parse, manager call, reply.
func BenchmarkHandle(b *testing.B) {
	for _, text := range []string{"/help", "/tasks", "hello"} {
		b.Run(text, func(b *testing.B) {
			r := newRig(b, defaultPolicy())
			for i := range 20 {
				r.submit(alice, fmt.Sprintf("https://example.org/feed-%d.xml", i))
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if len(r.core.Handle(ctx, r.msg(admin, text))) == 0 {
					b.Fatal("no reply")
				}
			}
		})
	}
}
