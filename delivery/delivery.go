// Package delivery pushes notices out of herald. The task manager claims
// every effect in the ledger first (I1); the dispatcher here takes queued
// effects, hands each to the sink for its recipient, and records the
// outcome the sink reports. Sinks only send and classify; retries, expiry,
// holding and ledger writes are the dispatcher's.
//
// The dispatcher groups the pushes it takes (dispatch.go) and sends each
// group through one list of stages (pipeline.go), each one policy in a
// file of its own:
//
//	resolve            the recipient's route; pushes to one that is gone end
//	skipDisabled       pushes to a disabled recipient end unsent
//	unclaimed(         skipped by pushes handed over in flight (Reserve checked them)
//	    ownerOnly      another replica's downloads are left to it, untouched
//	    digest         a recipient's notices wait for its digest, and go in it
//	    transportOff   wait while the recipient's transport is switched off
//	    expiry         pushes past their expiry end unsent
//	    hold           quiet hours and mutes hold the rest
//	    order          a task's earlier pushes go first, or along
//	    splitByType    one message type per webhook body
//	)
//	perPart(           once for each part of the message
//	    begin          a new attempt on each push; on with the ones won
//	    claimedInOrder none after a push another replica claimed
//	    compose        one message of the group's payloads
//	    annotate       the model's summary or translation, if asked and in time
//	    record         the sending record, before anything leaves
//	    transmit       the sink sends and classifies, the message laid out for the recipient (layout.go)
//	    standing       the recipient's record; gone, or failing too long, disables it
//	    retry          the recipient's retry schedule
//	    settle         the outcome recorded; another part goes round again
//	)
//
// A new policy (a digest, a retry schedule) is a new stage: one file,
// and one line in that list.
package delivery

import (
	"context"
	"time"

	"github.com/herald-bridge/herald/delivery/address"
)

// Message kinds (also the outbound webhook "type").
const (
	KindChanged  = "watch.changed"
	KindDeadline = "watch.deadline"
	KindInbound  = "inbound.event"
	KindState    = "task.state"
	KindTest     = "test"
	// KindDigest is a recipient's digest: the change notices held for it
	// until its digest schedule fired, from any number of tasks (digest.go).
	KindDigest = "watch.digest"
)

// Item changes.
const (
	ChangeNew      = "new"
	ChangeChanged  = "changed"
	ChangeRemoved  = "removed"
	ChangeDeadline = "deadline"
)

// Message is the neutral model of one push, rendered per channel.
type Message struct {
	// Template is the task's own layout of its notices (SPEC §20), kept
	// with the push so it needs no task to render; a recipient's own
	// template wins (layout.go). Body, when set, is the whole text of the
	// notice as a template laid it out: its first line is the headline.
	// It is set on the way to the sink (layout.go), so what a sink keeps
	// (the inbox) shows it.
	Template string `json:"template,omitempty"`
	Body     string `json:"body,omitempty"`

	Kind       string    `json:"kind"`
	Title      string    `json:"title"`
	Text       string    `json:"text,omitempty"` // free text (inbound summary, notices)
	TaskID     string    `json:"task_id,omitempty"`
	TaskName   string    `json:"task_name,omitempty"`
	Items      []Item    `json:"items,omitempty"`
	More       int       `json:"more,omitempty"` // items not listed ("and N more")
	OccurredAt time.Time `json:"occurred_at"`
	// Digest, on a digest (KindDigest), says what it gathered.
	Digest *DigestInfo `json:"digest,omitempty"`
	// Machine is what a model wrote about the notice as it was sent
	// (annotate.go): never stored in a payload, always shown marked as
	// machine-written.
	Machine *MachineText `json:"machine,omitempty"`
	// Zone is the IANA zone the task's times live in (a deadline's own
	// zone, else its schedule's), so a 23:59 America/New_York deadline is
	// shown as 23:59 EST whatever the recipient's default zone; "" leaves
	// the recipient's zone.
	Zone string `json:"zone,omitempty"`
}

// MachineText is a model's text about one notice: a short summary, a
// translation into Lang. Either may be empty.
type MachineText struct {
	Summary     string `json:"summary,omitempty"`
	Translation string `json:"translation,omitempty"`
	Lang        string `json:"lang,omitempty"` // the translation's language: en | zh
}

// DigestInfo is what a digest gathered: the notices it carries, by
// effect key, so that every replica can tell which queued notices it
// took (the claim that won is the one that counts).
type DigestInfo struct {
	Window  time.Time `json:"window"`          // the fire of the recipient's digest schedule it is for
	Members []string  `json:"members"`         // the effect keys of the notices it carries
	Inbox   bool      `json:"inbox,omitempty"` // the items beyond those listed (More) wait in the recipient's inbox
}

// Item is one listed item of a message.
type Item struct {
	ID     string    `json:"id"`
	Title  string    `json:"title"`
	Task   string    `json:"task,omitempty"` // in a digest: the name of the task the item is from
	URL    string    `json:"url,omitempty"`
	Change string    `json:"change"` // new | changed | removed | deadline
	Due    time.Time `json:"due,omitzero"`
	// WasTitle and WasDue are what a changed item was before, when that
	// differs from Title and Due. Both are optional: payloads written
	// before they existed decode without them and render as they did.
	WasTitle string    `json:"was_title,omitempty"`
	WasDue   time.Time `json:"was_due,omitzero"`
	// Summary is the item's own text in plain words (HTML stripped,
	// entities decoded, at most SummaryMax characters; SPEC §20). Diff is
	// the lines a page or JSON watch gained and lost. Both are optional:
	// payloads written before they existed decode without them.
	Summary string    `json:"summary,omitempty"`
	Diff    *ItemDiff `json:"diff,omitempty"`
}

// ItemDiff is the changed lines of an html or json watch's item, at most
// DiffMaxLines each way.
type ItemDiff struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// SummaryMax is the most characters (runes) an item summary holds, and
// DiffMaxLines the most lines each side of an item diff (SPEC §20).
const (
	SummaryMax   = 280
	DiffMaxLines = 20
)

// MaxItems is how many items one message lists before "and N more".
const MaxItems = 20

// AddressKind names a recipient transport.
type AddressKind string

const (
	TelegramChat AddressKind = AddressKind(address.Telegram)
	FeishuChat   AddressKind = AddressKind(address.Feishu)
	InboxAddr    AddressKind = AddressKind(address.Inbox)
	FeishuBot    AddressKind = "feishu_bot" // named: custom group bot
	Webhook      AddressKind = "webhook"    // named: HTTPS webhook
)

// Chat reports whether k is a chat people talk to herald in: only chats
// have preferences (/quiet, /mute).
func (k AddressKind) Chat() bool { return k == TelegramChat || k == FeishuChat }

// Address is a parsed recipient address (docs/configuration.md, Configuration; literal
// addresses are spelled by package address). Named recipients are
// resolved from config into an Address by the Router.
type Address struct {
	Kind AddressKind
	// Telegram: chat id. Feishu: chat_id or open_id (see IDType). Inbox: principal.
	// Named recipients: the recipient's name.
	ID     string
	IDType string // feishu: address.ChatID | address.OpenID
	Name   string // the named recipient, if any
	Topic  string // telegram: a forum topic's thread id ("" for the whole chat)
}

// String renders the address as written in config; it is a recipient
// address and must not reach logs or metrics (I10): use Redacted there.
func (a Address) String() string {
	if s := a.literal().String(); s != "" {
		return s
	}
	return a.Name
}

func (a Address) literal() address.Address {
	return address.Address{Kind: address.Kind(a.Kind), ID: a.ID, IDType: a.IDType, Topic: a.Topic}
}

// Redacted names the address without its identifying part.
func (a Address) Redacted() string {
	if a.Name != "" {
		return string(a.Kind) + ":" + a.Name
	}
	return string(a.Kind) + ":…"
}

// ParseAddress parses a literal address (not a named recipient).
func ParseAddress(s string) (Address, error) {
	a, err := address.Parse(s)
	if err != nil {
		return Address{}, err
	}
	return Address{Kind: AddressKind(a.Kind), ID: a.ID, IDType: a.IDType, Topic: a.Topic}, nil
}

// IsLiteral reports whether s is written as an address rather than a name.
func IsLiteral(s string) bool { return address.IsLiteral(s) }

// ValidPrincipal reports whether p is a well-formed principal.
func ValidPrincipal(p string) bool { return address.ValidPrincipal(p) }

// Delivery is one send request handed to a sink.
type Delivery struct {
	Key     string // effect key: idempotency key where the provider supports one
	To      Address
	Message Message
	Lang    string // "en" | "zh"
	Zone    *time.Location
	Attempt int // 1-based
	Part    int // which part of a split message to send (0-based)
}

// Result is how a sink classifies an attempt.
type Result int

const (
	// Completed: the provider accepted the message.
	Completed Result = iota + 1
	// Failed: the provider refused (bad recipient, blocked, forbidden).
	Failed
	// RetryAfter: provably not sent (connection refused, DNS, 429, a
	// provider error stating nothing was sent); retry after Outcome.After.
	RetryAfter
	// Unknown: the request may have reached the provider.
	Unknown
)

func (r Result) String() string {
	switch r {
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case RetryAfter:
		return "retry_after"
	case Unknown:
		return "unknown"
	}
	return "invalid"
}

// Outcome is a sink's report on one attempt.
type Outcome struct {
	Result     Result
	ProviderID string        // provider's message id (Completed)
	After      time.Duration // RetryAfter: wait at least this long
	Reason     string        // short, secret-free reason ("blocked", "rate_limited", "timeout", "http_503")
	// Unreachable marks the recipient itself as unreachable (bot blocked or
	// kicked, chat deleted) so owners can be told.
	Unreachable bool
	// Gone says the service will not take pushes for the recipient again
	// until someone acts (a webhook's 410, a chat that blocked the bot, a
	// robot whose key was reset): the recipient is disabled (disable.go).
	Gone bool
	// MigratedTo is a new address the provider moved the recipient to
	// (Telegram migrate_to_chat_id).
	MigratedTo string
	// Parts is how many parts the sink splits this message into (0 or 1:
	// one). The dispatcher sends Part 0..Parts-1, each its own attempt.
	Parts int
}

// Sink sends one delivery and classifies the outcome. A sink never retries.
type Sink interface {
	Send(ctx context.Context, d Delivery) Outcome
}

// Deduplicating is implemented by sinks whose provider deduplicates by the
// delivery key, so an Unknown outcome may be retried automatically (I3).
type Deduplicating interface {
	Dedups(to Address) bool
}

// Retrying is implemented by sinks whose recipients take automatic
// retries on a schedule and are disabled after failing for long
// (Standard Webhooks, SPEC §21); the zero policy keeps I3's rules.
type Retrying interface {
	RetryPolicy(to Address) RetryPolicy
}

// RetryPolicy is how a recipient's failed attempts are retried.
type RetryPolicy struct {
	// Schedule is the wait before each retry of an attempt that failed
	// (it may have arrived, or provably did not): len(Schedule) retries
	// at most, each waiting up to 10 % longer (jitter). nil: none, beyond
	// what I3 allows for any recipient.
	Schedule []time.Duration
	// DisableAfter disables the recipient once it has failed without a
	// single success for this long (0: never).
	DisableAfter time.Duration
}

// Windowed is implemented by deduplicating sinks whose provider drops a
// repeated key only for a while after the first request (Feishu: one
// hour); past it a replay would arrive twice.
type Windowed interface {
	DedupWindow() time.Duration
}
