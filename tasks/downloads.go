package tasks

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/tasks/download"
)

// Course files a task keeps (docs/sources.md, Learning platforms: downloads): a run
// claims one download effect per new file version, at most max_per_run
// (the rest at the next run, never dropped); the dispatcher hands them to
// the download sink, which asks DownloadPlan for the task's scope.

// downloadDir is the directory a task's approval binds (I8): "" when the
// task keeps no files.
func downloadDir(t *Task) string {
	if t.Source.Download == nil {
		return ""
	}
	return download.NormalDir(t.Source.Download.Dir)
}

// checkDownloadScope: the directory is the one approved, and an absolute
// one still lies under a root the policy lists.
func (p Policy) checkDownloadScope(t *Task) error {
	dir := downloadDir(t)
	if dir == "" {
		return nil
	}
	if t.Grant.Dir != dir {
		return userErr(ErrScope, "download_dir_changed", "the download directory changed since approval; it needs a new approval")
	}
	if err := download.CheckDir(dir, p.DownloadRoots); err != nil {
		return userErr(ErrScope, "download_dir_not_allowed", "the download directory is no longer allowed (%v); it needs a new approval", err)
	}
	return nil
}

// DownloadPlan implements download.Planner: the task's site, token,
// approved directory and file-storage hosts, as they are now. A deleted
// task has none (download.ErrGone), nor one outside its approval
// (download.ErrScope, I8).
func (m *Manager) DownloadPlan(ctx context.Context, id string) (download.Plan, error) {
	t, err := m.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return download.Plan{}, download.ErrGone
	}
	if err != nil {
		return download.Plan{}, err
	}
	if t.State == Deleted || t.State == Rejected {
		return download.Plan{}, download.ErrGone
	}
	p := m.Policy()
	if t.Grant == nil || downloadDir(t) == "" {
		return download.Plan{}, download.ErrScope
	}
	if err := p.checkScope(t); err != nil {
		return download.Plan{}, fmt.Errorf("%w: %v", download.ErrScope, err)
	}
	u, err := url.Parse(t.Source.URL)
	if err != nil {
		return download.Plan{}, download.ErrScope
	}
	site := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}
	hosts := p.DownloadHosts
	if len(hosts) == 0 {
		hosts = download.DefaultHosts
	}
	return download.Plan{Site: site, Kind: t.Source.Kind, Token: t.Source.Token, Dir: t.Grant.Dir,
		Hosts: slices.Clone(hosts), AllowPrivate: p.AllowPrivate}, nil
}

// Downloads lists the files a task keeps (owner or admin): name, course,
// size, when written, and those still to come or failed.
func (m *Manager) Downloads(ctx context.Context, who, id string) ([]download.Kept, error) {
	t, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !m.mayManage(who, t) {
		return nil, userErr(ErrForbidden, "files_forbidden", "only the task's owner or an admin can see its files")
	}
	fxs, err := m.store.Ledger().List(ctx, t.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	return download.KeptOf(fxs), nil
}
