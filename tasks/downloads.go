package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Course files a task keeps (README, Learning platforms: downloads): a run
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
		return userErr(ErrScope, "the download directory changed since approval; it needs a new approval",
			"批准之后下载目录变了；需要重新批准。")
	}
	if err := download.CheckDir(dir, p.DownloadRoots); err != nil {
		return userErr(ErrScope, "the download directory is no longer allowed (%v); it needs a new approval",
			"下载目录已不再允许（%v）；需要重新批准。", err)
	}
	return nil
}

// downloadEffects claims the downloads of one run: every listed file the
// task keeps whose version was never claimed, up to the per-run bound
// (I7). It returns the effects and how many files wait for a later run.
func (m *Manager) downloadEffects(ctx context.Context, t *Task, listed []watch.Item, now time.Time, limits Limits) ([]store.Effect, int, error) {
	d := t.Source.Download
	if d == nil {
		return nil, 0, nil
	}
	limit := limits.MaxItemsPerRun // the per-run bound is also the ceiling
	if d.MaxPerRun > 0 {
		limit = min(d.MaxPerRun, limit)
	}
	var files []*watch.File
	for _, it := range listed {
		if download.Wanted(d, it.File) {
			f := *it.File
			files = append(files, &f)
		}
	}
	download.Distinct(files)
	to := download.Recipient(t.ID)
	var out []store.Effect
	deferred := 0
	for _, f := range files {
		key := EffectKey(t.ID, download.Identity(f), to)
		if _, err := m.store.Ledger().Get(ctx, key); err == nil {
			continue // claimed before: written, or on its way
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, 0, fmt.Errorf("read the ledger: %w", err)
		}
		if len(out) >= limit {
			deferred++
			continue
		}
		msg, err := download.Message(t.ID, t.displayName(), f, now)
		if err != nil {
			return nil, 0, err
		}
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, 0, fmt.Errorf("encode download: %w", err)
		}
		// No expiry: a download waits until it is done, never dropped.
		out = append(out, store.Effect{
			Key: key, TaskID: t.ID, Recipient: to, Kind: download.Kind, Payload: payload,
			State: store.Pending, NotBefore: now, CreatedAt: now, UpdatedAt: now, RunID: key,
		})
	}
	return out, deferred, nil
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
		return nil, userErr(ErrForbidden, "only the task's owner or an admin can see its files",
			"只有任务的创建者或管理员可以查看它的文件。")
	}
	fxs, err := m.store.Ledger().List(ctx, t.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	return download.KeptOf(fxs), nil
}
