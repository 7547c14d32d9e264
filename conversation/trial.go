package conversation

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// Trier fetches a requested source once, through the same address guard
// and size cap as its runs, and reports what it found, with the feeds an
// HTML page advertises or an RSSHub instance's Radar offers for it
// (source.TryRequest); source.ErrNotTried: it was not tried.
type Trier interface {
	Try(ctx context.Context, spec watch.Spec) (source.Trial, error)
}

// TrialTimeout bounds the trial of one request.
const TrialTimeout = 15 * time.Second

// specOf is the watch a command asks for, as the trial reads it.
func specOf(cmd Command) watch.Spec {
	spec := watch.Spec{Kind: cmd.Kind, URL: cmd.URL, Selector: cmd.Selector}
	if source.IsRoute(cmd.URL) {
		route, _ := source.CleanRoute(cmd.URL)
		spec = watch.Spec{Kind: source.KindRSSHub, Route: route}
	}
	return spec
}

// try fetches the requested source once and says what it found: a line
// that goes before the reply (note), or, when the request would only
// fail or a page offers feeds to choose from, the whole answer (stop).
// A source that cannot be reached just now is still requested: its
// checks keep trying.
func (t *turn) try(cmd Command) (note string, stop []Reply) {
	tr := t.c.o.Trier
	if tr == nil || !t.c.o.Tasks.Policy().MayRequest(t.m.Principal) {
		return "", nil // one who may not ask makes herald fetch nothing; Submit says why
	}
	ctx, cancel := context.WithTimeout(t.ctx, TrialTimeout)
	defer cancel()
	res, err := tr.Try(ctx, specOf(cmd))
	if errors.Is(err, source.ErrNotTried) || t.ctx.Err() != nil {
		return "", nil
	}
	if len(res.Feeds) > 0 && cmd.Kind == "" && cmd.Selector == "" {
		return "", feedOffer{t}.offer(cmd, res.Feeds)
	}
	shown := source.Shown(specOf(cmd))
	if err != nil {
		switch watch.ClassOf(err) {
		case watch.Transient, watch.Cancelled:
			return t.tr("trial.unreachable", t.trialReason(err)), nil
		case watch.NotFound:
			return "", t.reply("trial.not_found", shown)
		case watch.Schema:
			if res.Page && cmd.Selector == "" {
				return "", t.reply("trial.no_list", shown)
			}
		}
		return "", t.reply("trial.unreadable", t.trialReason(err))
	}
	items := res.Result.Items
	if cmd.Name == "remind" {
		var next time.Time
		dated := 0
		for _, it := range items {
			if !it.Due.IsZero() {
				dated++
				if it.Due.After(t.c.o.Now()) && (next.IsZero() || it.Due.Before(next)) {
					next = it.Due
				}
			}
		}
		switch {
		case len(items) > 0 && dated == 0:
			return "", t.reply("trial.no_dates", shown)
		case !next.IsZero():
			return t.trCount("trial.due", dated, dated, t.when(next)), nil
		}
	}
	if len(items) == 0 {
		return t.tr("trial.empty"), nil
	}
	return t.trCount("trial.items", len(items), len(items), clipName(items[0].Title)), nil
}

// trialReason is a trial's failure for the reply, without its class
// (a refused address keeps it: runError words it in the reply's language).
func (t *turn) trialReason(err error) string {
	var we *watch.Error
	if errors.As(err, &we) && we.Class != watch.BlockedAddress {
		return t.runError(we.Err.Error())
	}
	return t.runError(err.Error())
}

// alreadyWatched answers a request for a source the same person already
// watches (or has asked for) the same way: a reminder and a watch of one
// calendar are two things.
func (t *turn) alreadyWatched(cmd Command) []Reply {
	list, err := t.c.o.Tasks.List(t.ctx, t.m.Principal)
	if err != nil {
		return nil
	}
	want := specOf(cmd)
	for _, tk := range list {
		if tk.Owner != t.m.Principal || !slices.Contains([]tasks.State{tasks.Active, tasks.Paused, tasks.PendingApproval}, tk.State) ||
			(len(tk.RemindBefore) > 0) != (cmd.Name == "remind") {
			continue
		}
		same := tk.Source.URL == want.URL
		if want.Route != "" {
			same = tk.Source.Kind == source.KindRSSHub && tk.Source.Route == want.Route
		}
		if !same {
			continue
		}
		if tk.State == tasks.PendingApproval {
			return t.reply("trial.already_requested", tk.Request.ID)
		}
		return t.reply("trial.already_watched", tk.ID, name(tk), tk.ID)
	}
	return nil
}
