package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/scheduler"
)

// taskView is the documented `herald tasks list --json` element.
type taskView struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	State       string     `json:"state"`
	Owner       string     `json:"owner"`
	Schedule    string     `json:"schedule"`
	NextRun     *time.Time `json:"next_run"`
	LastOutcome string     `json:"last_outcome"`
	// Class says why the last run failed (auth, schema, transient, …);
	// absent unless last_outcome is failed.
	Class string `json:"class,omitempty"`
	// Where is what the task watches: its source's kind and host.
	Where sourceView `json:"source"`
	// LastReason is the last failed run's error in words; absent unless
	// last_outcome is failed.
	LastReason string `json:"last_reason,omitempty"`
}

func viewTask(t *tasks.Task) taskView {
	v := taskView{ID: t.ID, Name: t.Name, State: string(t.State), Owner: t.Owner, Schedule: t.Schedule, LastOutcome: t.LastOutcome,
		Where: viewSource(t.Source.Kind, t.Source.URL)}
	if !t.NextRun.IsZero() && t.State == tasks.Active {
		n := t.NextRun.UTC()
		v.NextRun = &n
	}
	if t.LastOutcome == tasks.OutcomeFailed {
		v.Class = t.LastError // the failed run's class, recorded with the task
		v.LastReason = t.LastReason
	}
	return v
}

// requestView is one pending request in `herald requests list --json`.
type requestView struct {
	ID     string     `json:"id"` // the request id, r-…
	Task   string     `json:"task"`
	Name   string     `json:"name"`
	By     string     `json:"by"`
	At     time.Time  `json:"at"`
	Source string     `json:"source_url"`
	Where  sourceView `json:"source"`
	Sched  string     `json:"schedule"`
	Notify []string   `json:"notify"`
}

func viewRequest(t *tasks.Task) requestView {
	return requestView{ID: t.Request.ID, Task: t.ID, Name: t.Name, By: t.Request.By, At: t.Request.At.UTC(), Source: t.Source.URL,
		Where: viewSource(t.Source.Kind, t.Source.URL), Sched: t.Schedule, Notify: t.Notify}
}

// taskDetail is `herald tasks show --json`.
type taskDetail struct {
	taskView
	Request     tasks.Request     `json:"request"`
	Decision    *tasks.Decision   `json:"decision,omitempty"`
	Grant       *tasks.Grant      `json:"grant,omitempty"`
	Source      string            `json:"source_url"`
	Kind        string            `json:"kind,omitempty"`
	Notify      []string          `json:"notify"`
	Unreachable []string          `json:"unreachable,omitempty"`
	Failures    int               `json:"failures"`
	Runs        []tasks.RunRecord `json:"runs"`
	// Next says when the next check is and why then (absent when none
	// is planned).
	Next *tasks.NextCheck `json:"next_check,omitempty"`
}

// nextWhy says in words why a task's next check is when it is.
func nextWhy(n *tasks.NextCheck) string {
	switch {
	case n == nil:
		return ""
	case n.Why == tasks.NextByRetryAfter:
		return n.Host + " asked herald to wait until then"
	case n.Why == tasks.NextByBackoff:
		return fmt.Sprintf("backing off after %s in a row", plural(n.Failures, "failure", "failures"))
	}
	return "on schedule"
}

// runNote is what a run's row says beside its counts: its error in
// words, else its class and reason.
func runNote(r tasks.RunRecord) string {
	if r.Error != "" {
		return r.Error
	}
	return strings.TrimSpace(string(r.Class) + " " + r.Reason)
}

// effectView is the documented `herald ledger show --json` element.
type effectView struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Task      string    `json:"task"`
	Recipient string    `json:"recipient"`
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	UpdatedAt time.Time `json:"updated_at"`
	Error     string    `json:"error"`
}

func viewEffect(fx store.Effect) effectView {
	return effectView{ID: fx.Key, Key: fx.Key, Task: fx.TaskID, Recipient: fx.Recipient, State: string(fx.State),
		Attempts: attemptsMade(fx), UpdatedAt: fx.UpdatedAt.UTC(), Error: fx.Error}
}

// attemptsMade counts the sends tried; the entry a redelivery request adds
// to the history is not one.
func attemptsMade(fx store.Effect) int {
	n := 0
	for _, a := range fx.Attempts {
		if !strings.HasPrefix(a.Error, store.RedeliveryMark) {
			n++
		}
	}
	return n
}

// runView is `herald tasks run --json`.
type runView = tasks.RunRecord

// inboxView is one inbox item.
type inboxView struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
}

// statusView is `herald status --json`.
type statusView struct {
	Version  string            `json:"version"`
	Holder   string            `json:"holder"`
	Owner    bool              `json:"owner"`
	Epoch    uint64            `json:"epoch"`
	Store    string            `json:"store"`
	StoreOK  bool              `json:"store_ok"`
	Channels map[string]string `json:"channels"`
	Tasks    int               `json:"tasks"`
	Listen   string            `json:"listen"`
	// Shards is this replica's share of scheduling (I5).
	Shards *scheduler.ShardStatus `json:"shards,omitempty"`
	// Conditional is how many source documents this replica was
	// answered, and the share that came back 304 Not Modified.
	Conditional *conditionalView `json:"conditional_get,omitempty"`
}

// sendTestView is `herald send-test --json`.
type sendTestView struct {
	Effect    string `json:"effect"`
	Recipient string `json:"recipient"`
	State     string `json:"state"` // the effect's state in the ledger
	// Outcome is the class of the sink's answer: completed, failed,
	// retry_after (provably not sent; tried again after RetryIn), unknown
	// (it may have arrived, or no answer came in time); pending when no
	// attempt began in time.
	Outcome    string  `json:"outcome"`
	Reason     string  `json:"reason,omitempty"`   // the sink's reason, secret-free
	RetryIn    float64 `json:"retry_in,omitempty"` // retry_after: seconds until the next attempt
	Elapsed    float64 `json:"elapsed"`            // seconds until the answer
	Attempts   int     `json:"attempts"`
	Error      string  `json:"error,omitempty"`
	ProviderID string  `json:"provider_id,omitempty"`
}

// plural is n with its noun in English: "1 failure", "3 failures".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
