package delivery

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/store"
)

// The combinators the stage list is written with: a stage's batches go
// to the next in order, a split batch goes on as several, unclaimed
// stages are skipped by a batch claimed in flight, and perPart runs its
// stages again for as long as the last passes the batch on.
func TestPipeline_StagesComposeAsListed(t *testing.T) {
	var trace []string
	note := func(name string, next func(*batch) []*batch) stage {
		return func(_ context.Context, _ *Dispatcher, b *batch) []*batch {
			keys := make([]string, len(b.fx))
			for i, fx := range b.fx {
				keys[i] = fx.Key
			}
			trace = append(trace, name+":"+strings.Join(keys, ","))
			return next(b)
		}
	}
	split := func(b *batch) []*batch {
		out := make([]*batch, len(b.fx))
		for i := range b.fx {
			one := *b
			one.fx = b.fx[i : i+1]
			out[i] = &one
		}
		return out
	}
	parts := 0
	lastPart := func(b *batch) []*batch {
		if parts++; parts%2 == 1 { // two parts each
			return pass(b)
		}
		return nil
	}
	p := pipeline{
		note("first", pass),
		unclaimed(note("check", pass), note("split", split)),
		perPart(note("send", pass), note("settle", lastPart)),
		note("after", pass),
	}
	fxs := []store.Effect{{Key: "a"}, {Key: "b"}}

	if out := p.exec(context.Background(), nil, &batch{fx: fxs}); out != nil {
		t.Errorf("batches passed on after perPart: %d, want none", len(out))
	}
	want := "first:a,b check:a,b split:a,b send:a settle:a send:a settle:a send:b settle:b send:b settle:b"
	if got := strings.Join(trace, " "); got != want {
		t.Errorf("unclaimed batch went\n %s\nwant\n %s", got, want)
	}

	trace, parts = nil, 0
	p.exec(context.Background(), nil, &batch{fx: fxs, claimed: true})
	want = "first:a,b send:a,b settle:a,b send:a,b settle:a,b"
	if got := strings.Join(trace, " "); got != want {
		t.Errorf("claimed batch went\n %s\nwant\n %s", got, want)
	}
}
