package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/backup"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/opml"
	"github.com/herald-bridge/herald/tasks/transfer"
	hook "github.com/herald-bridge/herald/webhook"
)

// This file holds export, import and backup: the admin API's side and
// the CLI's (docs/operations.md, Export, import and backup).

type exportIn struct {
	Tasks string `json:"tasks"` // "all" or a principal
	// Feeds: the export is for OPML, so the kind of a task watched
	// without one is detected again (exportkind.go).
	Feeds bool `json:"feeds,omitempty"`
}

// exportTasks answers the bundle of the tasks asked for, secrets and
// addresses already left out: they never leave the service.
func (o *adminOps) exportTasks(ctx context.Context, in exportIn) (any, error) {
	if in.Tasks != "" && in.Tasks != "all" && !delivery.ValidPrincipal(in.Tasks) {
		return nil, hook.BadInput("--tasks takes all or a principal, which looks like " + address.Forms())
	}
	list, err := o.m.List(ctx, consoleAdmin)
	if err != nil {
		return nil, err
	}
	b := bundle.Bundle{Format: bundle.Format, Created: time.Now().UTC().Truncate(time.Second), Herald: version, Tasks: []bundle.Task{}}
	var kept []*tasks.Task
	for _, t := range list {
		if t.State == tasks.Rejected || (in.Tasks != "" && in.Tasks != "all" && t.Owner != in.Tasks) {
			continue
		}
		b.Tasks = append(b.Tasks, bundle.FromTask(t))
		kept = append(kept, t)
	}
	if in.Feeds {
		o.resolveDetected(ctx, kept, b.Tasks)
	}
	return b, nil
}

type importIn struct {
	As     string        `json:"as"`
	DryRun bool          `json:"dry_run"`
	Tasks  []bundle.Task `json:"tasks"`
}

func (o *adminOps) importTasks(ctx context.Context, in importIn) (any, error) {
	who := in.As
	if who == "" {
		who = o.defaultImporter()
	}
	if !delivery.ValidPrincipal(who) {
		return nil, hook.BadInput("--as takes a principal, which looks like " + address.Forms())
	}
	rows, err := transfer.Import(ctx, o.m, transfer.Request{Principal: who, DryRun: in.DryRun}, in.Tasks)
	if err != nil {
		return nil, err
	}
	return wordRows(rows), nil
}

// wordedRow is one row of an import's answer: the row, and its detail as
// the Chinese catalogue words it.
type wordedRow struct {
	transfer.Row
	DetailZh string `json:"detail_zh,omitempty"`
}

// wordRows words each row's detail in Chinese too, without a closing full
// stop (U+3002): a table shows it in brackets.
func wordRows(rows []transfer.Row) []wordedRow {
	out := make([]wordedRow, len(rows))
	for i, r := range rows {
		zh := r.Detail
		if w, ok := text.Error("zh", r.Why); ok {
			zh = w
		}
		out[i] = wordedRow{Row: r, DetailZh: strings.TrimRight(zh, "\u3002")}
	}
	return out
}

// defaultImporter is whose requests an import without --as makes: the
// first admin, as for tasks in the config file.
func (o *adminOps) defaultImporter() string {
	if admins := o.m.Policy().Admins; len(admins) > 0 {
		return admins[0]
	}
	return "console:admin"
}

type backupIn struct {
	Out string `json:"out"` // absolute path the service writes
}

// snapshotter is a store that can copy itself consistently while in use.
type snapshotter interface {
	Backup(ctx context.Context, w io.Writer) error
}

func (o *adminOps) backup(ctx context.Context, in backupIn) (any, error) {
	if !filepath.IsAbs(in.Out) {
		return nil, hook.BadInput("the backup's path must be absolute")
	}
	o.s.mu.Lock()
	sc := o.s.cfg.Store
	o.s.mu.Unlock()
	return writeBackup(ctx, o.s.store, sc, in.Out)
}

// snapshotterOf finds the backend under the service's wrappers of it
// (the ledger's metrics).
func snapshotterOf(st store.Store) (snapshotter, bool) {
	for {
		if s, ok := st.(snapshotter); ok {
			return s, true
		}
		c, ok := st.(countingStore)
		if !ok {
			return nil, false
		}
		st = c.Store
	}
}

// backupView is what `herald backup` says it wrote.
type backupView struct {
	Out     string `json:"out"`
	Bytes   int64  `json:"bytes"`
	Driver  string `json:"driver"`
	Offline bool   `json:"offline,omitempty"` // taken with no herald running
}

// writeBackup writes a backup of st, configured as sc, to out.
func writeBackup(ctx context.Context, st store.Store, sc configs.Store, out string) (backupView, error) {
	snap, ok := snapshotterOf(st)
	if !ok {
		return backupView{}, hook.BadInput("this store cannot be backed up")
	}
	m := backup.Manifest{Created: time.Now().UTC(), Herald: version, Driver: "bolt"}
	if sc.Driver == configs.DriverRedis {
		m.Driver, m.Prefix = "redis", sc.Redis.KeyPrefix
	}
	n, err := writeFileAtomic(out, func(w io.Writer) error {
		return backup.Write(w, m, func(w io.Writer) error { return snap.Backup(ctx, w) })
	})
	if err != nil {
		return backupView{}, err
	}
	return backupView{Out: out, Bytes: n, Driver: m.Driver}, nil
}

// writeFileAtomic writes path through a private temporary file renamed
// into place, so a reader never sees half of it. It returns the size.
func writeFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	name := tmp.Name()
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	var n int64
	if st, serr := tmp.Stat(); serr == nil {
		n = st.Size()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return 0, err
	}
	return n, nil
}

func cmdExport(e *env, args []string) int {
	which := e.flags.String("tasks", "all", "all, or the principal whose tasks to export")
	asOPML := e.flags.Bool("opml", false, "write the rss tasks as OPML 2.0 instead of a bundle")
	out, code, ok := e.parseOut(args, "want --out FILE (and no other arguments)")
	if !ok {
		return code
	}
	var b bundle.Bundle
	if code := e.do("export", exportIn{Tasks: *which, Feeds: *asOPML}, &b, time.Minute); code != exitOK {
		return code
	}
	n := len(b.Tasks)
	_, err := writeFileAtomic(out, func(w io.Writer) error {
		if *asOPML {
			var err error
			n, err = opml.Write(w, "herald feeds", b.Created, b.Tasks)
			return err
		}
		return bundle.Write(w, b)
	})
	if err != nil {
		return e.fail(fmt.Errorf("write %s: %w", out, err))
	}
	if e.json {
		e.printJSON(map[string]any{"out": out, "tasks": n})
		return exitOK
	}
	fmt.Fprintf(e.stdout, "wrote %d task(s) to %s\n", n, out)
	return exitOK
}

// batches splits list into as few admin calls as the API's bound on a
// request body allows: usually one, so a dry run sees the whole file.
func batches(list []bundle.Task) [][]bundle.Task {
	const room = hook.MaxAdminBody * 3 / 4
	var out [][]bundle.Task
	var cur []bundle.Task
	size := 0
	for _, t := range list {
		b, _ := json.Marshal(t)
		if len(cur) > 0 && size+len(b) > room {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, t), size+len(b)+1
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func cmdImport(e *env, args []string) int {
	as := e.flags.String("as", "", "the principal whose requests the tasks become (default: the first admin)")
	dry := e.flags.Bool("dry-run", false, "say what would happen and change nothing")
	file, code, ok := e.parseOne(args, "want exactly one FILE (a bundle .zip or an .opml file)")
	if !ok {
		return code
	}
	f, err := os.Open(file)
	if err != nil {
		return e.fail(err)
	}
	data, err := io.ReadAll(io.LimitReader(f, opml.MaxBytes+1))
	f.Close()
	if err != nil {
		return e.fail(err)
	}
	list, err := transfer.Decode(data)
	if err != nil {
		return e.fail(fmt.Errorf("%s: %w", file, err))
	}
	rows := []wordedRow{}
	for _, part := range batches(list) {
		var got []wordedRow
		if code := e.do("import", importIn{As: *as, DryRun: *dry, Tasks: part}, &got, 5*time.Minute); code != exitOK {
			return code
		}
		rows = append(rows, got...)
	}
	if e.json {
		e.printJSON(rows)
		return exitOK
	}
	table(e.stdout, "NAME\tSOURCE\tSTATE\tREQUEST\tDETAIL", importRows(rows))
	if *dry {
		fmt.Fprintln(e.stdout, "dry run: nothing was changed")
	}
	return exitOK
}

func importRows(rows []wordedRow) [][]string {
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, []string{dash(r.Name), r.Source, string(r.State), dash(r.Task), dash(r.Detail)})
	}
	return out
}

func cmdBackup(e *env, args []string) int {
	out, code, ok := e.parseOut(args, "want --out FILE")
	if !ok {
		return code
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return e.fail(err)
	}
	var v backupView
	err = e.try("backup", backupIn{Out: abs}, &v, 30*time.Minute)
	if errors.Is(err, errNotRunning) {
		v, err = offlineBackup(e, abs)
	}
	if err != nil {
		return e.fail(err)
	}
	if e.json {
		e.printJSON(v)
		return exitOK
	}
	how := "while herald runs"
	if v.Offline {
		how = "with herald stopped"
	}
	fmt.Fprintf(e.stdout, "wrote a %s backup of %d bytes to %s (%s)\n", v.Driver, v.Bytes, v.Out, how)
	return exitOK
}

// errRestore is wrapped by every refusal of herald restore.
var errRestore = errors.New("restore refused")
