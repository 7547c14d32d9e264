package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	hook "github.com/herald-bridge/herald/webhook"
	webconsole "github.com/herald-bridge/herald/webhook/console"
)

// Recipients, disabled and enabled again (SPEC §21): the state the
// dispatcher keeps per recipient, listed and switched back on by the CLI
// (herald recipients list|enable) and the console, and the range replay
// of herald ledger redeliver --recipient.

// recipients is the shared recipient state the dispatcher and the
// operators read and write.
func (s *service) recipients() delivery.KVRecipients {
	return delivery.KVRecipients{KV: s.store.Channels()}
}

// namedRecipient reports whether recipient is declared in config.
func (s *service) namedRecipient(recipient string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cfg.Recipients[recipient]
	return ok
}

// recipientDesk answers the CLI's and the console's recipient requests.
type recipientDesk struct{ s *service }

var _ webconsole.Recipients = recipientDesk{}

// List implements webconsole.Recipients: every recipient declared in
// config, then the other recipients that are disabled.
func (d recipientDesk) List(ctx context.Context) ([]webconsole.RecipientRow, error) {
	s := d.s
	s.mu.Lock()
	names := make([]string, 0, len(s.cfg.Recipients))
	for name := range s.cfg.Recipients {
		names = append(names, name)
	}
	s.mu.Unlock()
	sort.Strings(names)
	rs := s.recipients()
	out := make([]webconsole.RecipientRow, 0, len(names))
	for _, name := range names {
		st, err := rs.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, d.row(st))
	}
	off, err := rs.Disabled(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(off, func(i, j int) bool { return off[i].Recipient < off[j].Recipient })
	for _, st := range off {
		if !slices.Contains(names, st.Recipient) {
			out = append(out, d.row(st))
		}
	}
	return out, nil
}

func (d recipientDesk) row(st delivery.RecipientState) webconsole.RecipientRow {
	kind := "named"
	if r, err := d.s.table.Resolve(st.Recipient); err == nil {
		kind = string(r.To.Kind)
	}
	state := "enabled"
	if st.Disabled {
		state = "disabled"
	}
	return webconsole.RecipientRow{Name: st.Recipient, Kind: kind, State: state, Reason: st.Reason,
		DisabledAt: st.DisabledAt, LastSuccess: st.LastSuccess, Failures: st.Failures, LastError: st.LastError}
}

// errNoRecipient: the name is neither declared nor a disabled address.
func errNoRecipient(name string) error {
	return &hook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: "no recipient named " + name}
}

// Enable implements webconsole.Recipients.
func (d recipientDesk) Enable(ctx context.Context, who, name string) (webconsole.RecipientRow, error) {
	if err := d.admin(who); err != nil {
		return webconsole.RecipientRow{}, err
	}
	rs := d.s.recipients()
	st, err := rs.Get(ctx, name)
	if err != nil {
		return webconsole.RecipientRow{}, err
	}
	if !st.Disabled && !d.s.namedRecipient(name) {
		return webconsole.RecipientRow{}, errNoRecipient(name)
	}
	st, _, err = rs.Enable(ctx, name, time.Now())
	if err != nil {
		return webconsole.RecipientRow{}, err
	}
	d.s.log.Info().Str("by", who).Msg("recipient enabled")
	return d.row(st), nil
}

func (d recipientDesk) admin(who string) error {
	if who != consoleAdmin && !d.s.manager.Policy().IsAdmin(who) {
		return &hook.Error{Status: http.StatusForbidden, Code: "admin_only", Msg: "only an admin can do that"}
	}
	return nil
}

// Redeliver implements webconsole.Recipients: it reads the pushes of
// every source that may have sent to q.Recipient (its tasks, the
// notices of tasks it owns, the inbound hooks, test pushes, the disable
// notices) and replays the range (delivery.RedeliverRange).
func (d recipientDesk) Redeliver(ctx context.Context, who string, q delivery.Range, dryRun bool) (webconsole.RangeResult, error) {
	if err := d.admin(who); err != nil {
		return webconsole.RangeResult{}, err
	}
	if who == consoleAdmin {
		who = "console:admin"
	}
	s := d.s
	all, err := s.manager.All(ctx)
	if err != nil {
		return webconsole.RangeResult{}, err
	}
	sources := []string{"test", tasks.DisabledSource}
	for _, t := range all {
		if slices.Contains(t.Notify, q.Recipient) || t.OwnerAddress() == q.Recipient {
			sources = append(sources, t.ID)
		}
	}
	s.mu.Lock()
	for name := range s.cfg.Inbound {
		sources = append(sources, "hook:"+name)
	}
	s.mu.Unlock()
	var fxs []store.Effect
	for _, src := range sources {
		got, err := s.store.Ledger().List(ctx, src, 0)
		if err != nil {
			return webconsole.RangeResult{}, fmt.Errorf("read the ledger of %s: %w", src, err)
		}
		for _, fx := range got {
			if q.Matches(fx) {
				fxs = append(fxs, fx)
			}
		}
	}
	sel, queued, err := delivery.RedeliverRange(ctx, s.store.Ledger(), fxs, q, who, time.Now(), dryRun)
	if len(queued) > 0 {
		s.dispatch.Wake()
	}
	res := webconsole.RangeResult{DryRun: dryRun, Queued: len(queued)}
	for _, fx := range sel {
		res.Effects = append(res.Effects, webconsole.RangeEffect{Key: fx.Key, Task: fx.TaskID, State: string(fx.State),
			Error: fx.Error, CreatedAt: fx.CreatedAt})
	}
	if err != nil && !errors.Is(err, store.ErrIllegalTransition) {
		return res, err
	}
	return res, nil
}

// The admin API's recipient operations.

type recipientIn struct {
	Name string `json:"name"`
}

func (o *adminOps) listRecipients(ctx context.Context, _ struct{}) (any, error) {
	return recipientDesk{o.s}.List(ctx)
}

func (o *adminOps) enableRecipient(ctx context.Context, in recipientIn) (any, error) {
	return recipientDesk{o.s}.Enable(ctx, consoleAdmin, in.Name)
}

// rangeIn is herald ledger redeliver --recipient's request.
type rangeIn struct {
	Recipient string    `json:"recipient"`
	States    []string  `json:"states"`
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	DryRun    bool      `json:"dry_run"`
}

func (o *adminOps) redeliverRange(ctx context.Context, in rangeIn) (any, error) {
	q, err := rangeOf(in)
	if err != nil {
		return nil, err
	}
	return recipientDesk{o.s}.Redeliver(ctx, consoleAdmin, q, in.DryRun)
}

// rangeOf checks a range request.
func rangeOf(in rangeIn) (delivery.Range, error) {
	q := delivery.Range{Recipient: in.Recipient, Since: in.Since, Until: in.Until}
	if q.Recipient == "" {
		return q, hook.BadInput("a recipient is required")
	}
	for _, st := range in.States {
		switch s := store.EffectState(st); s {
		case store.Failed, store.Unknown:
			q.States = append(q.States, s)
		default:
			return q, hook.BadInput("--state is failed or unknown; completed pushes are never replayed")
		}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return q, hook.BadInput("--since must be before --until")
	}
	return q, nil
}
