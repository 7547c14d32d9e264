package main

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/tasks/download"
)

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
	au, sum := summaryOf("downloads")
	fs := e.flags("downloads")
	pos, code, ok := e.parse(fs, "downloads", au, sum, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		if code, ok := subcommand(e, "downloads", pos[0], "list"); !ok {
			return code
		}
	}
	if len(pos) != 2 {
		return usageErr(e, "downloads", "want list TASK")
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
