// Package tasks is herald's task catalog: the model, the policy,
// requests and approvals, pause, resume and delete, the limits, tasks
// declared in config, and every read of tasks and their run history.
// Chat commands, the admin CLI and config files reach tasks through the
// Manager; nothing else writes task records (README, Architecture).
//
// Where a chat command becomes a task: Manager.Submit (requests),
// Manager.Approve (grants). Where a task becomes a push: tasks/scheduler
// plans its runs, tasks/runner fetches, compares and claims effects in
// the ledger in one fenced commit, and delivery takes them from there.
// Pushes that come from no run (inbound hooks, test pushes) are claimed
// by delivery.Admitter.
package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// State is a task's lifecycle state.
type State string

const (
	PendingApproval State = "pending_approval"
	Active          State = "active"
	Paused          State = "paused"
	Errored         State = "error"
	Done            State = "done"
	Rejected        State = "rejected"
	Deleted         State = "deleted"
)

// Origin says who declared a task.
const (
	OriginChat   = "chat"
	OriginConfig = "config"
)

// Task is one watch (or reminder) task as stored in the catalog.
type Task struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Source       watch.Spec      `json:"source"`
	Schedule     string          `json:"schedule"`
	RemindBefore []time.Duration `json:"remind_before,omitempty"`
	Notify       []string        `json:"notify"`
	Include      []string        `json:"include,omitempty"`
	Exclude      []string        `json:"exclude,omitempty"`
	Owner        string          `json:"owner"`              // principal
	ReplyTo      string          `json:"reply_to,omitempty"` // the requesting chat's address
	Lang         string          `json:"lang,omitempty"`
	Origin       string          `json:"origin"`
	State        State           `json:"state"`

	Request  Request   `json:"request"`
	Decision *Decision `json:"decision,omitempty"`
	Grant    *Grant    `json:"grant,omitempty"`

	NextRun     time.Time `json:"next_run,omitzero"`
	LastRunEnd  time.Time `json:"last_run_end,omitzero"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	Failures    int       `json:"failures,omitempty"`    // failed runs in a row
	FailingRun  string    `json:"failing_run,omitempty"` // first run of the failing streak that was notified
	Suspect     bool      `json:"suspect,omitempty"`     // a mass change awaits the owner's confirmation
	Unreachable []string  `json:"unreachable,omitempty"` // recipients the provider reported unreachable
	// NextRemind is the next reminder instant of the stored snapshot (the
	// zero time: none), kept with the task so that planning needs no
	// snapshot; nil when not known (the snapshot is read then).
	NextRemind *time.Time `json:"next_remind,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Revision is the catalog revision this copy was read at (not stored in the value).
	Revision uint64 `json:"-"`

	// NotifyRemoved makes an item leaving a feed news (RemovalsNotified),
	// and Template is the task's own layout of its notices (a Go
	// text/template; a recipient's own wins), both SPEC §20.
	NotifyRemoved bool   `json:"notify_removed,omitempty"`
	Template      string `json:"template,omitempty"`
	// SourceTitle is the source's own title (a feed's), as its last read
	// gave it: what notices call a task that has no name.
	SourceTitle string `json:"source_title,omitempty"`
}

// Request records who asked for a task, and when.
type Request struct {
	ID  string    `json:"id"` // r-xxxx
	By  string    `json:"by"`
	At  time.Time `json:"at"`
	Via string    `json:"via,omitempty"` // chat address or "config" / "cli"
	// Name is the requester's display name, shown to admins with the
	// principal; "" when the channel gave none.
	Name string `json:"name,omitempty"`
}

// Decision records an approval or rejection.
type Decision struct {
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Approved bool      `json:"approved"`
	Reason   string    `json:"reason,omitempty"`
	Auto     bool      `json:"auto,omitempty"` // auto_approve rule or config file
}

// Grant is the scope an approval binds (I8). Grants are written by the
// manager only; no request field can set them.
type Grant struct {
	Owner      string    `json:"owner"`
	Operations []string  `json:"operations"` // watch, remind
	Host       string    `json:"host"`
	PathPrefix string    `json:"path_prefix"`
	Recipients []string  `json:"recipients"`
	Dir        string    `json:"download_dir,omitempty"`
	Basis      string    `json:"basis"` // allowed_hosts | auto_approve | admin | config
	By         string    `json:"by"`
	At         time.Time `json:"at"`
}

// RunRecord is one entry of a task's bounded run history.
type RunRecord struct {
	ID        string        `json:"id"`
	TaskID    string        `json:"task"`
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration"`
	Outcome   string        `json:"outcome"` // ok | baseline | unchanged | suspect | failed | rejected | cancelled | interrupted | deferred
	Class     watch.Class   `json:"class,omitempty"`
	Error     string        `json:"error,omitempty"`
	Attempts  int           `json:"attempts,omitempty"`
	Items     int           `json:"items"`
	New       int           `json:"new,omitempty"`
	Changed   int           `json:"changed,omitempty"`
	Removed   int           `json:"removed,omitempty"`
	Deadline  int           `json:"deadline,omitempty"`
	Effects   int           `json:"effects,omitempty"`   // effects claimed
	Deferred  int           `json:"deferred,omitempty"`  // events and downloads left for the next run (I7)
	Downloads int           `json:"downloads,omitempty"` // course files claimed for download
	Skipped   int           `json:"skipped,omitempty"`   // unreadable parts of the document left out
	Selector  string        `json:"selector,omitempty"`  // the html selector picked when the task gives none
	Reason    string        `json:"reason,omitempty"`
}

// Run outcomes.
const (
	OutcomeOK          = "ok"
	OutcomeBaseline    = "baseline"
	OutcomeUnchanged   = "unchanged"
	OutcomeSuspect     = "suspect"
	OutcomeFailed      = "failed"
	OutcomeRejected    = "rejected" // commit refused: task changed or owner epoch stale (I5)
	OutcomeCancelled   = "cancelled"
	OutcomeInterrupted = "interrupted"
)

func encodeTask(t *Task) ([]byte, error) { return json.Marshal(t) }

func decodeTask(b []byte, rev uint64) (*Task, error) {
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode task: %w", err)
	}
	t.Revision = rev
	return &t, nil
}

// Errors callers decide on. Messages are plain and safe to show in chat.
var (
	ErrNotFound  = errors.New("no such task or request")
	ErrForbidden = errors.New("not allowed")
	ErrScope     = errors.New("outside the approved scope")
	ErrLimit     = errors.New("limit reached")
	ErrInvalid   = errors.New("invalid request")
	ErrState     = errors.New("not possible in the task's current state")
	ErrNotOwner  = errors.New("this replica does not own scheduling")
	// ErrBusy: another replica kept the task-create lease too long. It
	// wraps store.ErrUnavailable, so callers that know only the store's
	// errors treat it as "try again later" too.
	ErrBusy = fmt.Errorf("busy creating another task: %w", store.ErrUnavailable)
)

// UserError is an error with a plain message for people, wrapping one of
// the sentinels above. Its English is written where the error is made;
// other languages word it by its code ("tasks.<code>" in the
// conversation's catalogues, which words it with Args).
type UserError struct {
	Kind error
	Code string // stable, lower_snake; the same code always reads the same
	Args []any  // what its wording takes, in the English format's order
	Msg  string // English, lower case and without a final full stop
}

func (e *UserError) Error() string { return e.Msg }
func (e *UserError) Unwrap() error { return e.Kind }

// Coded gives the error's catalogue code, its arguments and its English.
func (e *UserError) Coded() (code string, args []any, english string) {
	return "tasks." + e.Code, e.Args, e.Msg
}

// userErr makes a UserError of kind: its code, and its English as a fmt
// format over args. Every user-facing error of the manager is made here;
// a test checks that each call names a code of ErrorCodes and that its
// English uses every argument. A catalogue words a coded error among args
// in its own language; one whose message is to be quoted as it is goes in
// as err.Error().
func userErr(kind error, code, en string, args ...any) error {
	return &UserError{Kind: kind, Code: code, Args: args, Msg: fmt.Sprintf(en, args...)}
}

// ErrorCodes are the codes of every UserError the manager makes, each
// worded by the catalogues as "tasks.<code>"; a test keeps this list and
// the manager's calls in step.
func ErrorCodes() []string {
	return []string{
		"address_metadata",
		"address_not_public",
		"address_port",
		"already_deleted",
		"approve_admin_only",
		"bad_address",
		"bad_schedule",
		"bad_url",
		"busy",
		"cannot_run",
		"credentials_in_url",
		"declared_bad_schedule",
		"download_dir_changed",
		"download_dir_not_allowed",
		"files_forbidden",
		"host_not_allowed",
		"host_not_auto_approved",
		"may_not_request",
		"no_approval",
		"no_recipient",
		"no_such_task",
		"not_active",
		"not_owner",
		"not_paused",
		"not_web_address",
		"outside_approval",
		"owner_changed",
		"owner_may_not_request",
		"owner_or_admin",
		"owner_task_limit",
		"recipient_added",
		"recipient_admin_only",
		"recipient_gone",
		"recipient_not_yours",
		"redeliver_admin_only",
		"redeliver_forbidden",
		"reject_admin_only",
		"request_decided",
		"run_forbidden",
		"run_not_owner",
		"source_unreadable",
		"state_forbids",
		"task_limit",
		"task_url_invalid",
		"token_not_for_kind",
		"unknown_kind",
	}
}

// Word is a word a UserError carries that reads differently in each
// language (a task state): its English, and the key a catalogue words it
// by.
type Word struct{ En, Key string }

func (w Word) String() string  { return w.En }
func (w Word) TextKey() string { return w.Key }

// StateText names a state for people: in English, and by its catalogue
// key ("state.paused").
func StateText(s State) Word { return Word{En: stateWord(s), Key: "state." + string(s)} }

// kindChoices are the source kinds as alternatives: "rss, ical, json or
// html" in English; other languages join them their own way.
type kindChoices struct{}

func (kindChoices) String() string    { return source.List("", "", ", ", " or ") }
func (kindChoices) Choices() []string { return source.Names() }

// DiffOptions are the options a run compares t's source under.
func (t *Task) DiffOptions(l Limits) watch.Options {
	return watch.Options{RemindBefore: t.RemindBefore, Include: t.Include, Exclude: t.Exclude, MaxEvents: l.MaxItemsPerRun}
}
