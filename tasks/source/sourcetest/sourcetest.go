// Package sourcetest helps tests try requested sources on loopback fakes
// the way serve does, and gives them a source whose answers they script.
package sourcetest

import (
	"context"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Trier tries requests with source.TryRequest, private networks allowed
// (the fakes listen on 127.0.0.1), asking Instances for rsshub routes and
// Radar rules. It fits conversation.Trier.
type Trier struct{ Instances []source.Instance }

// Try tries spec once.
func (g Trier) Try(ctx context.Context, spec watch.Spec) (source.Trial, error) {
	o := source.Options{AllowPrivate: true}
	radar := source.Options{AllowPrivate: true, Instances: g.Instances}
	if spec.Kind == source.KindRSSHub {
		o = radar
	}
	return source.TryRequest(ctx, spec, o, radar)
}
