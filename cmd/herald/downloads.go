package main

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/tasks/download"
)

// downloadPlan is the manager's plan for a task's downloads, with the
// token a course site given in chat reads from the credential store, as
// its runs do.
func (s *service) downloadPlan(ctx context.Context, id string) (download.Plan, error) {
	plan, err := s.manager.DownloadPlan(ctx, id)
	if err != nil {
		return plan, err
	}
	t, err := s.manager.Get(ctx, id)
	if err != nil {
		return plan, err
	}
	plan.Route = s.route(t.Source.Proxy)
	if plan.Token != "" {
		return plan, nil
	}
	if resolve := tokenResolver(s.store.Channels(), t.Source); resolve != nil {
		if plan.Token, err = resolve(ctx); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// listDownloads answers downloads.list: the files a task keeps.
func (o *adminOps) listDownloads(ctx context.Context, in idIn) (any, error) {
	kept, err := o.m.Downloads(ctx, consoleAdmin, in.ID)
	if err != nil {
		return nil, err
	}
	if kept == nil {
		kept = []download.Kept{}
	}
	return kept, nil
}

// cmdDownloads is `herald downloads list TASK`: the course files a task
// keeps, read through the admin API.
func cmdDownloads(e *env, args []string) int {
	pos, code, ok := e.parseSub(args, "list")
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return e.usage("want list TASK")
	}
	kept, code, done := call[[]download.Kept](e, "downloads.list", map[string]any{"id": pos[1]}, 30*time.Second)
	if done {
		return code
	}
	if len(kept) == 0 {
		fmt.Fprintln(e.stdout, "no files kept")
		return exitOK
	}
	rows := make([][]string, 0, len(kept))
	for _, k := range kept {
		w := k.When
		rows = append(rows, []string{k.Name, dash(k.Course), download.SizeText(k.Size), when(&w), k.State, dash(k.Error)})
	}
	table(e.stdout, "NAME\tCOURSE\tSIZE\tWHEN\tSTATE\tERROR", rows)
	return exitOK
}
