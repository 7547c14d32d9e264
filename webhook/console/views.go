package console

import (
	"cmp"
	"context"
	"github.com/herald-bridge/herald/delivery/address"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/webhook"
)

// What the console shows is built here. Recipients appear only as names:
// a configured recipient by its name, a literal address by its relation
// to the task (the requester's chat, the owner's inbox) and its transport,
// never the chat id or principal it holds (README, The promise: I10).
// Source URLs lose their query, fragment and user info, where tokens live.

// recipientView names one recipient without its address.
type recipientView struct {
	Name string `json:"name,omitempty"` // a configured recipient
	Role string `json:"role,omitempty"` // reply_to | owner_inbox | inbox | chat
	Kind string `json:"kind"`
}

// literalKind is the transport a literal (unnamed) address is written
// for, "" for a configured recipient's name.
func literalKind(r string) string {
	if !address.IsLiteral(r) {
		return ""
	}
	kind, _, _ := strings.Cut(r, ":")
	return kind
}

// kindOfAddress is the transport of a literal address, "named" otherwise.
func kindOfAddress(r string) string {
	if k := literalKind(r); k != "" {
		return k
	}
	return "named"
}

func (c *Console) recipient(t *tasks.Task, r string) recipientView {
	v := recipientView{Kind: c.o.KindOf(r)}
	if literalKind(r) == "" {
		v.Name = r
		return v
	}
	switch {
	case t != nil && r == t.ReplyTo:
		v.Role = "reply_to"
	case t != nil && r == address.InboxOf(t.Owner):
		v.Role = "owner_inbox"
	case address.IsInbox(r):
		v.Role = "inbox"
	default:
		v.Role = "chat"
	}
	return v
}

func (c *Console) recipients(t *tasks.Task, rs []string) []recipientView {
	out := make([]recipientView, 0, len(rs))
	for _, r := range rs {
		out = append(out, c.recipient(t, r))
	}
	return out
}

// scrubURL keeps scheme, host and path.
func scrubURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

var reURL = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// scrubText cuts queries and user info out of every URL in an error text.
func scrubText(s string) string {
	return reURL.ReplaceAllStringFunc(s, func(m string) string {
		if v := scrubURL(m); v != "" {
			return v
		}
		return "…"
	})
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// taskItem is one row of the task list.
type taskItem struct {
	ID          string     `json:"id"`
	RequestID   string     `json:"request_id"`
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Owner       string     `json:"owner"`
	Kind        string     `json:"kind"`
	Origin      string     `json:"origin"`
	Source      string     `json:"source"`
	Schedule    string     `json:"schedule"`
	NextRun     *time.Time `json:"next_run"`
	LastOutcome string     `json:"last_outcome"`
	Failures    int        `json:"failures"`
	// LastError is why the last check failed, in the source's words;
	// absent unless it failed.
	LastError string `json:"last_error,omitempty"`
}

func itemOf(t *tasks.Task) taskItem {
	v := taskItem{ID: t.ID, RequestID: t.Request.ID, Name: t.Name, State: string(t.State), Owner: t.Owner,
		Kind: t.Source.Kind, Origin: t.Origin, Source: scrubURL(t.Source.URL), Schedule: t.Schedule,
		LastOutcome: t.LastOutcome, Failures: t.Failures}
	if v.Kind == "" {
		v.Kind = "auto"
	}
	if t.State == tasks.Active {
		v.NextRun = timePtr(t.NextRun)
	}
	if t.LastOutcome == tasks.OutcomeFailed {
		v.LastError = lastError(t)
	}
	return v
}

// nextCheck is a task's next check for the page; nil when none is planned.
func nextCheck(n tasks.NextCheck) *tasks.NextCheck {
	if n.At.IsZero() {
		return nil
	}
	n.At = n.At.UTC()
	return &n
}

// lastError is why t's last check failed: the source's words when the
// run kept them, else the failure's class.
func lastError(t *tasks.Task) string { return scrubText(cmp.Or(t.LastReason, t.LastError)) }

// scanCache keeps the newest ledger entries of every source for a few
// seconds, so the attention and delivery views read the ledger once
// between them. Any console action drops it.
type scanCache struct {
	mu    sync.Mutex
	at    time.Time
	fxs   []store.Effect
	tasks map[string]*tasks.Task
}

const (
	scanTTL       = 3 * time.Second
	scanPerSource = 100
)

func (s *scanCache) drop() {
	s.mu.Lock()
	s.at = time.Time{}
	s.mu.Unlock()
}

// scan returns the newest effects of every task and extra source, and the
// tasks by id.
func (c *Console) scan(ctx context.Context) ([]store.Effect, map[string]*tasks.Task, error) {
	s := c.cache
	s.mu.Lock()
	defer s.mu.Unlock()
	now := c.o.Now()
	if !s.at.IsZero() && now.Sub(s.at) < scanTTL {
		return s.fxs, s.tasks, nil
	}
	list, err := c.o.Manager.List(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]*tasks.Task, len(list))
	sources := make([]string, 0, len(list)+4)
	for _, t := range list {
		byID[t.ID] = t
		sources = append(sources, t.ID)
	}
	sources = append(sources, c.o.Sources()...)
	var fxs []store.Effect
	for _, src := range sources {
		got, err := c.o.Manager.Effects(ctx, src, scanPerSource)
		if err != nil {
			continue
		}
		fxs = append(fxs, got...)
	}
	s.at, s.fxs, s.tasks = now, fxs, byID
	return fxs, byID, nil
}

func (c *Console) taskName(byID map[string]*tasks.Task, id string) string {
	if t := byID[id]; t != nil && t.Name != "" {
		return t.Name
	}
	return id
}

// attention answers the "needs attention" view.
func (c *Console) attention(w http.ResponseWriter, r *http.Request, _ Session) error {
	ctx := r.Context()
	fxs, byID, err := c.scan(ctx)
	if err != nil {
		return webhook.ErrUnavailable
	}
	type pending struct {
		taskItem
		RequestedBy string          `json:"requested_by"`
		RequestedAt time.Time       `json:"requested_at"`
		Recipients  []recipientView `json:"recipients"`
	}
	type failing struct {
		taskItem
		Class     string     `json:"class"`
		Streak    int        `json:"streak"`
		LastError string     `json:"last_error"`
		LastRun   *time.Time `json:"last_run"`
	}
	type unknown struct {
		Key       string        `json:"key"`
		Task      string        `json:"task"`
		TaskName  string        `json:"task_name"`
		Kind      string        `json:"kind"`
		Recipient recipientView `json:"recipient"`
		Attempts  int           `json:"attempts"`
		UpdatedAt time.Time     `json:"updated_at"`
		Error     string        `json:"error"`
	}
	type unreachable struct {
		Task       string          `json:"task"`
		TaskName   string          `json:"task_name"`
		Recipients []recipientView `json:"recipients"`
	}
	// refusing is a recipient with pushes waiting after refused attempts
	// (a robot that refuses connections, a rate limit): reachable in
	// principle, not now.
	type refusing struct {
		Recipient recipientView `json:"recipient"`
		Pushes    int           `json:"pushes"`
		Attempts  int           `json:"attempts"`
		LastError string        `json:"last_error"`
		UpdatedAt time.Time     `json:"updated_at"`
	}
	out := struct {
		OK          bool          `json:"ok"`
		Pending     []pending     `json:"pending"`
		Failing     []failing     `json:"failing"`
		Unknown     []unknown     `json:"unknown"`
		Unreachable []unreachable `json:"unreachable"`
		Refusing    []refusing    `json:"refusing"`
	}{OK: true, Pending: []pending{}, Failing: []failing{}, Unknown: []unknown{}, Unreachable: []unreachable{}, Refusing: []refusing{}}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := byID[id]
		switch {
		case t.State == tasks.PendingApproval:
			out.Pending = append(out.Pending, pending{taskItem: itemOf(t), RequestedBy: t.Request.By, RequestedAt: t.Request.At.UTC(),
				Recipients: c.recipients(t, t.Notify)})
		case t.State == tasks.Errored || (t.Failures > 0 && t.State == tasks.Active):
			f := failing{taskItem: itemOf(t), Streak: t.Failures, LastError: lastError(t), LastRun: timePtr(t.LastRunEnd)}
			if runs, err := c.o.Manager.Runs(ctx, t.ID, 1); err == nil && len(runs) > 0 {
				f.Class = string(runs[0].Class)
				if f.LastError == "" {
					f.LastError = scrubText(runs[0].Error)
				}
			}
			out.Failing = append(out.Failing, f)
		}
		if len(t.Unreachable) > 0 && t.State != tasks.Deleted {
			out.Unreachable = append(out.Unreachable, unreachable{Task: t.ID, TaskName: c.taskName(byID, t.ID), Recipients: c.recipients(t, t.Unreachable)})
		}
	}
	for _, fx := range fxs {
		if fx.State != store.Unknown {
			continue
		}
		out.Unknown = append(out.Unknown, unknown{Key: fx.Key, Task: fx.TaskID, TaskName: c.taskName(byID, fx.TaskID), Kind: fx.Kind,
			Recipient: c.recipient(byID[fx.TaskID], fx.Recipient), Attempts: len(fx.Attempts), UpdatedAt: fx.UpdatedAt.UTC(), Error: scrubText(fx.Error)})
	}
	slices.SortFunc(out.Unknown, func(a, b unknown) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	refused := map[string]int{} // recipient → index in out.Refusing
	for _, fx := range fxs {
		if fx.State != store.Pending || fx.Error == "" || len(fx.Attempts) == 0 {
			continue
		}
		v := c.recipient(byID[fx.TaskID], fx.Recipient)
		key := v.Kind + "\x00" + v.Name + "\x00" + v.Role
		i, ok := refused[key]
		if !ok {
			i = len(out.Refusing)
			refused[key] = i
			out.Refusing = append(out.Refusing, refusing{Recipient: v})
		}
		r := &out.Refusing[i]
		r.Pushes++
		r.Attempts += len(fx.Attempts)
		if fx.UpdatedAt.After(r.UpdatedAt) {
			r.UpdatedAt, r.LastError = fx.UpdatedAt.UTC(), scrubText(fx.Error)
		}
	}
	return writeJSON(w, out)
}

// tasks answers the task list, filtered by state, owner and kind.
func (c *Console) tasks(w http.ResponseWriter, r *http.Request, _ Session) error {
	list, err := c.o.Manager.List(r.Context(), "")
	if err != nil {
		return webhook.ErrUnavailable
	}
	q := r.URL.Query()
	state, owner, kind := q.Get("state"), strings.TrimSpace(q.Get("owner")), q.Get("kind")
	items := make([]taskItem, 0, len(list))
	owners, kinds := map[string]bool{}, map[string]bool{}
	for _, t := range list {
		it := itemOf(t)
		owners[it.Owner], kinds[it.Kind] = true, true
		if (state != "" && it.State != state) || (owner != "" && it.Owner != owner) || (kind != "" && it.Kind != kind) {
			continue
		}
		items = append(items, it)
	}
	return writeJSON(w, map[string]any{"ok": true, "tasks": items, "owners": sortedKeys(owners), "kinds": sortedKeys(kinds)})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// runView is one run of a task's history, for its chart.
type runView struct {
	Start      time.Time `json:"start"`
	DurationMS int64     `json:"duration_ms"`
	Outcome    string    `json:"outcome"`
	Class      string    `json:"class,omitempty"`
	Items      int       `json:"items"`
	New        int       `json:"new"`
	Changed    int       `json:"changed"`
	Removed    int       `json:"removed"`
	Effects    int       `json:"effects"`
	Error      string    `json:"error,omitempty"`
}

// task answers one task's details: scope, recipients, schedule, next run
// and its last 30 runs.
func (c *Console) task(w http.ResponseWriter, r *http.Request, _ Session) error {
	t, err := c.o.Manager.Get(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		return actionError(err)
	}
	runs, err := c.o.Manager.Runs(r.Context(), t.ID, 30)
	if err != nil {
		return webhook.ErrUnavailable
	}
	rv := make([]runView, 0, len(runs))
	for _, x := range runs {
		rv = append(rv, runView{Start: x.Start.UTC(), DurationMS: x.Duration.Milliseconds(), Outcome: x.Outcome, Class: string(x.Class),
			Items: x.Items, New: x.New, Changed: x.Changed, Removed: x.Removed, Effects: x.Effects, Error: scrubText(x.Error)})
	}
	type scope struct {
		Operations []string        `json:"operations"`
		Host       string          `json:"host"`
		PathPrefix string          `json:"path_prefix"`
		Recipients []recipientView `json:"recipients"`
		Basis      string          `json:"basis"`
		By         string          `json:"by"`
		At         time.Time       `json:"at"`
	}
	var sc *scope
	if g := t.Grant; g != nil {
		sc = &scope{Operations: g.Operations, Host: g.Host, PathPrefix: g.PathPrefix, Recipients: c.recipients(t, g.Recipients),
			Basis: g.Basis, By: g.By, At: g.At.UTC()}
	}
	var remind []string
	for _, d := range t.RemindBefore {
		remind = append(remind, d.String())
	}
	return writeJSON(w, map[string]any{
		"ok": true, "task": itemOf(t), "scope": sc, "recipients": c.recipients(t, t.Notify),
		"unreachable": c.recipients(t, t.Unreachable), "remind_before": remind,
		"requested_by": t.Request.By, "requested_at": t.Request.At.UTC(), "decision": t.Decision,
		"last_error": lastError(t), "runs": rv, "next_check": nextCheck(c.o.Manager.Next(t)),
	})
}

// Attempt results in the delivery view.
var resultNames = []string{"completed", "failed", "unknown", "retry"}

// delivery answers attempts by recipient kind and result, per hour over
// the last ?hours (default 24, at most 72).
func (c *Console) delivery(w http.ResponseWriter, r *http.Request, _ Session) error {
	hours, _ := strconv.Atoi(r.URL.Query().Get("hours"))
	if hours <= 0 {
		hours = 24
	}
	hours = min(hours, 72)
	fxs, byID, err := c.scan(r.Context())
	if err != nil {
		return webhook.ErrUnavailable
	}
	now := c.o.Now().UTC()
	end := now.Truncate(time.Hour).Add(time.Hour)
	from := end.Add(-time.Duration(hours) * time.Hour)
	series := map[string]map[string][]int{}
	states := map[string]int{}
	// perRecipient names each recipient (as the console shows them: a
	// configured name, or a role and transport, never the address) with
	// its attempts in the window by result and its last error.
	type recipientRow struct {
		Recipient recipientView  `json:"recipient"`
		Results   map[string]int `json:"results"`
		LastError string         `json:"last_error,omitempty"`
		last      time.Time
	}
	var perRecipient []*recipientRow
	rowOf := map[recipientView]*recipientRow{}
	for _, fx := range fxs {
		states[string(fx.State)]++
		kind := c.o.KindOf(fx.Recipient)
		rv := c.recipient(byID[fx.TaskID], fx.Recipient)
		for _, a := range fx.Attempts {
			if a.End.IsZero() || a.Start.Before(from) || strings.HasPrefix(a.Error, store.RedeliveryMark) {
				continue
			}
			res := string(a.Outcome)
			if a.Outcome == store.Pending {
				res = "retry"
			}
			row := rowOf[rv]
			if row == nil {
				row = &recipientRow{Recipient: rv, Results: map[string]int{}}
				rowOf[rv] = row
				perRecipient = append(perRecipient, row)
			}
			row.Results[res]++
			if a.Error != "" && a.End.After(row.last) {
				row.last, row.LastError = a.End, scrubText(a.Error)
			}
			if series[kind] == nil {
				series[kind] = map[string][]int{}
				for _, n := range resultNames {
					series[kind][n] = make([]int, hours)
				}
			}
			if s, ok := series[kind][res]; ok {
				i := int(a.Start.Sub(from) / time.Hour)
				if i >= 0 && i < hours {
					s[i]++
				}
			}
		}
	}
	type kindView struct {
		Kind   string           `json:"kind"`
		Series map[string][]int `json:"series"`
		Total  int              `json:"total"`
	}
	kinds := make([]kindView, 0, len(series))
	for k, s := range series {
		kv := kindView{Kind: k, Series: s}
		for _, counts := range s {
			for _, n := range counts {
				kv.Total += n
			}
		}
		kinds = append(kinds, kv)
	}
	slices.SortFunc(kinds, func(a, b kindView) int { return strings.Compare(a.Kind, b.Kind) })
	slices.SortFunc(perRecipient, func(a, b *recipientRow) int {
		return strings.Compare(a.Recipient.Name+a.Recipient.Role+a.Recipient.Kind, b.Recipient.Name+b.Recipient.Role+b.Recipient.Kind)
	})
	if perRecipient == nil {
		perRecipient = []*recipientRow{}
	}
	return writeJSON(w, map[string]any{"ok": true, "from": from, "hours": hours, "results": resultNames, "kinds": kinds, "states": states,
		"recipients": perRecipient})
}
