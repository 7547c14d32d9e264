package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
	hook "github.com/herald-bridge/herald/webhook"
)

// previewIn asks for a task's latest notice as a recipient would get it.
type previewIn struct {
	Task      string `json:"task"`
	Recipient string `json:"recipient"`
}

// previewView is a previewed notice: its text in the default plain
// layout after the recipient's format and template, and why a template
// failed (the default layout is shown then).
type previewView struct {
	Text     string `json:"text"`
	Template string `json:"template,omitempty"` // whose template laid it out: recipient | task
	Error    string `json:"error,omitempty"`
}

// previewItems bounds the items a preview takes from the snapshot when
// the task has pushed no change yet.
const previewItems = 5

// previewTemplate renders the task's latest items as the recipient (or,
// without one, anyone without a format or template of their own) would
// get them (SPEC §20, herald template preview).
func (o *adminOps) previewTemplate(ctx context.Context, in previewIn) (any, error) {
	t, err := o.m.Get(ctx, in.Task)
	if err != nil {
		return nil, err
	}
	o.s.mu.Lock()
	route := delivery.Route{Lang: o.s.cfg.Language, Zone: o.s.cfg.Location}
	o.s.mu.Unlock()
	if in.Recipient != "" {
		if route, err = o.s.table.Resolve(in.Recipient); err != nil && !errors.Is(err, delivery.ErrTransportOff) {
			return nil, hook.BadInput(fmt.Sprintf("no recipient %s: %v", in.Recipient, err))
		}
	}
	m, err := latestNotice(ctx, o.s.store, t)
	if err != nil {
		return nil, err
	}
	v := previewView{}
	switch {
	case route.Template != "":
		v.Template = "recipient"
	case t.Template != "":
		v.Template = "task"
	}
	laid, err := delivery.Present(m, route)
	if err != nil {
		v.Error = err.Error()
	}
	v.Text = render.Text(laid, route.Lang, route.Zone, time.Now())
	return v, nil
}

// latestNotice is the task's last change notice, its items as they were
// pushed; for a task that pushed none yet, a few of the items it
// watches, as new ones.
func latestNotice(ctx context.Context, st store.Store, t *tasks.Task) (delivery.Message, error) {
	m := delivery.Message{Kind: delivery.KindChanged, TaskID: t.ID, TaskName: t.DisplayName(), Template: t.Template, OccurredAt: time.Now()}
	fxs, err := st.Ledger().List(ctx, t.ID, 0)
	if err != nil {
		return m, err
	}
	fxs = slices.DeleteFunc(fxs, func(fx store.Effect) bool { return fx.Kind != delivery.KindChanged })
	slices.SortStableFunc(fxs, func(a, b store.Effect) int { return b.CreatedAt.Compare(a.CreatedAt) })
	seen := map[string]bool{}
	for _, fx := range fxs {
		if fx.RunID != fxs[0].RunID {
			break
		}
		var pushed delivery.Message
		if json.Unmarshal(fx.Payload, &pushed) != nil {
			continue
		}
		m.OccurredAt = pushed.OccurredAt
		for _, it := range pushed.Items {
			if !seen[it.ID] && len(m.Items) < delivery.MaxItems {
				seen[it.ID] = true
				m.Items = append(m.Items, it)
			}
		}
	}
	if len(m.Items) > 0 {
		return m, nil
	}
	b, err := st.Snapshots().Get(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		return m, hook.BadInput("the task has not read its source yet: run it first (herald tasks run " + t.ID + ")")
	}
	if err != nil {
		return m, err
	}
	snap, err := watch.DecodeSnapshot(b)
	if err != nil || snap == nil {
		return m, cmp.Or(err, errors.New("no snapshot"))
	}
	for _, id := range slices.Sorted(maps.Keys(snap.Items)) {
		if len(m.Items) == previewItems {
			break
		}
		e := snap.Items[id]
		m.Items = append(m.Items, delivery.Item{ID: id, Title: e.Title, URL: e.URL, Change: delivery.ChangeNew, Due: e.Due, Summary: e.Summary})
	}
	return m, nil
}

// cmdTemplate is `herald template preview --task ID [--recipient NAME]`.
func cmdTemplate(e *env, args []string) int {
	task := e.flags.String("task", "", "the task whose latest items to render")
	recipient := e.flags.String("recipient", "", "render as this recipient gets it (its format and template)")
	pos, code, ok := e.parseSub(args, "preview")
	if !ok {
		return code
	}
	if len(pos) != 1 || *task == "" {
		return e.usage("want preview --task ID [--recipient NAME]")
	}
	v, code, done := call[previewView](e, "template.preview", previewIn{Task: *task, Recipient: *recipient}, 30*time.Second)
	if done {
		return code
	}
	if v.Error != "" {
		fmt.Fprintf(e.stderr, "the %s's template failed (%s); this is the default layout it falls back to\n", v.Template, v.Error)
	}
	fmt.Fprint(e.stdout, v.Text)
	return exitOK
}
