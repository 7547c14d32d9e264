// Package transfer imports tasks from a bundle or an OPML file as
// requests of one principal: each goes through the task manager's policy
// and approval exactly as a chat request does, and each gets one honest
// state (docs/operations.md, Export, import and backup). A dry run answers the same
// table and writes nothing.
package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/opml"
	"github.com/herald-bridge/herald/tasks/source"
)

// State is what became of one imported task.
type State string

const (
	// Imported: a request now awaits approval or the task is active.
	Imported State = "imported"
	// NeedsConfiguration: a secret or a recipient the export left out, or
	// a recipient name this herald does not have.
	NeedsConfiguration State = "needs-configuration"
	// Unsupported: a kind, schedule or address this herald cannot take.
	Unsupported State = "unsupported"
	// Duplicate: the principal already watches it.
	Duplicate State = "duplicate"
	// Refused: outside the policy (not allowed, a recipient not theirs,
	// the task limit).
	Refused State = "refused"
)

// Row is one line of an import's answer.
type Row struct {
	Name   string `json:"name"`
	Source string `json:"source"` // scheme, host and path: a query may carry a token
	State  State  `json:"state"`
	// Task is the request's id ("r-…") when one was made, or the one
	// already watching it for a duplicate.
	Task   string `json:"task,omitempty"`
	Active bool   `json:"active,omitempty"` // approved at once
	Detail string `json:"detail,omitempty"` // in English
	// Why is what Detail says: a coded problem, or the manager's refusal
	// (coded too). The layer that shows the row words it in its reader's
	// language.
	Why error `json:"-"`
}

// problem is why a row has its state, or why a file was refused: a code
// for a catalogue ("transfer.<code>", see conversation/text's Coded), the
// arguments its wording takes, and its English message.
type problem struct {
	code string
	args []any
	en   string
}

func (p problem) Error() string                  { return p.en }
func (p problem) Coded() (string, []any, string) { return "transfer." + p.code, p.args, p.en }

// explain sets the row's detail from why.
func (row *Row) explain(why error) { row.Why, row.Detail = why, why.Error() }

// Manager is the part of the task manager an import uses.
type Manager interface {
	Submit(ctx context.Context, s tasks.Submission) (*tasks.Task, error)
	Preview(s tasks.Submission) (*tasks.Task, error)
	List(ctx context.Context, who string) ([]*tasks.Task, error)
	Policy() tasks.Policy
}

// Request says whose requests the tasks become.
type Request struct {
	Principal string
	By        string // display name for the admins
	ReplyTo   string // the chat the file came from ("" from the CLI)
	Lang      string
	DryRun    bool
}

// Decode reads a bundle archive or an OPML file, whichever data is.
func Decode(data []byte) ([]bundle.Task, error) {
	if bundle.IsArchive(data) {
		b, err := bundle.Read(bytes.NewReader(data))
		return b.Tasks, err
	}
	return opml.Read(bytes.NewReader(data))
}

// Import submits each task of list as a request of r.Principal and says
// what became of it. Each task is one catalog write or none.
func Import(ctx context.Context, m Manager, r Request, list []bundle.Task) ([]Row, error) {
	if r.Principal == "" {
		return nil, errors.New("an import needs the principal whose requests the tasks become")
	}
	all, err := m.List(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read the tasks: %w", err)
	}
	p := m.Policy()
	watched := map[string]string{}
	live := 0
	for _, t := range all {
		if t.State == tasks.Rejected {
			continue
		}
		live++
		if t.Owner == r.Principal {
			watched[sameSource(t.Source.URL, t.Source.Selector, t.Source.Items)] = t.Request.ID
		}
	}
	rows := make([]Row, 0, len(list))
	for _, bt := range list {
		row := Row{Name: bt.Name, Source: source.ShowURL(bt.Source.URL)}
		sub, st, why := r.submission(p, bt)
		if st == "" {
			key := sameSource(sub.URL, sub.Selector, sub.Fields.Items)
			if id, ok := watched[key]; ok {
				st, row.Task = Duplicate, id
				why = problem{"already_watched", nil, "already watched"}
			} else {
				st, why = r.submit(ctx, m, sub, &row, live, p.Limits.MaxTasks)
				if st == Imported {
					watched[key] = row.Task
					live++
				}
			}
		}
		row.State = st
		row.explain(why)
		rows = append(rows, row)
	}
	return rows, nil
}

// submission turns bt into r's request, or says why it cannot be one.
func (r Request) submission(p tasks.Policy, bt bundle.Task) (s tasks.Submission, st State, why error) {
	if len(bt.Needs) > 0 {
		w := strings.Join(bt.Needs, ", ")
		return s, NeedsConfiguration, problem{"left_out", []any{w}, "the export left out " + w + "; give it again by hand"}
	}
	if !source.Valid(bt.Source.Kind) {
		return s, Unsupported, problem{"unknown_kind", []any{bt.Source.Kind}, fmt.Sprintf("unknown kind %q", bt.Source.Kind)}
	}
	for _, n := range bt.Notify {
		if !address.IsLiteral(n) && !p.Named[n] {
			return s, NeedsConfiguration, problem{"no_recipient", []any{n}, "no recipient named " + n + " here"}
		}
	}
	var before []time.Duration
	for _, d := range bt.RemindBefore {
		v, err := parseDuration(d)
		if err != nil {
			return s, Unsupported, problem{"bad_remind_before", []any{d}, fmt.Sprintf("cannot read remind_before %q", d)}
		}
		before = append(before, v)
	}
	src := bt.Source
	s = tasks.Submission{
		Principal: r.Principal, By: r.By, ReplyTo: r.ReplyTo, Lang: r.Lang,
		URL: src.URL, Kind: src.Kind, Selector: src.Selector, Schedule: bt.Schedule, Name: bt.Name,
		RemindBefore: before, Notify: bt.Notify, Include: bt.Include, Exclude: bt.Exclude, Courses: src.Courses,
		Fields: tasks.SourceFields{Items: src.Items, ID: src.ID, Title: src.Title, Link: src.Link, Due: src.Due, Watch: src.Watch},
	}
	return s, "", nil
}

// submit makes the request (or, in a dry run, previews it).
func (r Request) submit(ctx context.Context, m Manager, s tasks.Submission, row *Row, live, limit int) (State, error) {
	var t *tasks.Task
	var err error
	if r.DryRun {
		t, err = m.Preview(s)
		if err == nil && live >= limit {
			return Refused, problem{"task_limit", []any{limit}, fmt.Sprintf("herald has reached its task limit (%d)", limit)}
		}
	} else {
		t, err = m.Submit(ctx, s)
	}
	if err != nil {
		return classify(err)
	}
	row.Task, row.Active = t.Request.ID, t.State == tasks.Active
	if row.Active {
		return Imported, problem{"active", nil, "active"}
	}
	return Imported, problem{"awaiting_approval", nil, "awaiting approval"}
}

// classify maps the manager's refusal to a state; the refusal is the
// row's detail.
func classify(err error) (State, error) {
	if errors.Is(err, tasks.ErrInvalid) {
		return Unsupported, err
	}
	return Refused, err
}

// sameSource is what makes two tasks watch the same thing.
func sameSource(raw, selector, items string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Fragment = ""
	return u.String() + "\x00" + strings.TrimSpace(selector) + "\x00" + items
}

// parseDuration reads Go duration text, or whole days ("3d").
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d <= 0 || d > 3650 {
			return 0, errors.New("bad days")
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}
