package main

import (
	"context"
	"sync"
	"time"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/watch"
)

// detectBound bounds the one fetch that finds a detected task's kind for
// an OPML export; detectParallel is how many such fetches run at once.
const (
	detectBound    = 15 * time.Second
	detectParallel = 4
)

// resolveDetected fills in the kind of each exported task watched
// without one ("detected"), so an OPML export carries the feeds added by
// a plain /watch URL. The kind a run detects is not kept with the task,
// so it is detected again here: one fetch of the source, through the
// same guard and approved scope as a run, for the tasks whose last run
// read their source. A task whose source cannot be read now keeps no kind
// and is left out of the OPML, as before.
func (o *adminOps) resolveDetected(ctx context.Context, list []*tasks.Task, out []bundle.Task) {
	sem := make(chan struct{}, detectParallel)
	var wg sync.WaitGroup
	for i, t := range list {
		if t.Source.Kind != "" || !readItsSource(t) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if kind := o.detectKind(ctx, t); kind != "" {
				out[i].Source.Kind = kind
			}
		}()
	}
	wg.Wait()
}

// readItsSource reports whether t's last run read its source.
func readItsSource(t *tasks.Task) bool {
	switch t.LastOutcome {
	case tasks.OutcomeOK, tasks.OutcomeBaseline, tasks.OutcomeUnchanged:
		return true
	}
	return false
}

func (o *adminOps) detectKind(ctx context.Context, t *tasks.Task) string {
	opener := o.s.sourceOpener()
	var (
		src tasks.Source
		err error
	)
	if so, ok := opener.(tasks.ScopedOpener); ok && t.Grant != nil {
		src, err = so.OpenScoped(t.Source, time.UTC, tasks.Scope{Host: t.Grant.Host, PathPrefix: t.Grant.PathPrefix})
	} else {
		src, err = opener.Open(t.Source, time.UTC)
	}
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, detectBound)
	defer cancel()
	res, err := src.Fetch(ctx, watch.Conditional{})
	if err != nil {
		return ""
	}
	return res.Kind
}
