package conversation

import "context"

// Message is one inbound chat message or button press, the neutral model
// every channel produces.
type Message struct {
	Channel   string // telegram | feishu | console
	ID        string // platform message / update / event id (dedup)
	Principal string // telegram:<user_id> | feishu:<open_id> | console:<name>
	Chat      string // reply address: telegram:chat:<id> | feishu:chat:<id> | feishu:user:<open_id> | console:<name>
	// Topic is the forum topic the message was sent in, as a recipient
	// address (telegram:chat:<id>:topic:<thread_id>); "" outside topics.
	// The conversation is still the group's (Chat).
	Topic     string
	Group     bool   // a group chat (replies only where addressed)
	Addressed bool   // in a group: the bot was mentioned, replied to, or /cmd@bot used
	Text      string // the text with any leading @bot mention removed
	Lang      string // "en" | "zh" ("" = the configured default)
	Name      string // display name of the sender, for summaries shown to admins
	Button    *Press // non-nil for a button press
	File      *File  // non-nil for a document sent in a private chat
}

// File is a document a person sent: a task bundle or an OPML file to
// import as their requests (docs/operations.md, Export, import and backup).
type File struct {
	Name string
	Size int64 // as the platform reports it (0: unknown)
	// Fetch downloads the file, failing when it is longer than max bytes.
	Fetch func(ctx context.Context, max int64) ([]byte, error)
}

// Press is a pressed button.
type Press struct {
	Action string // approve | reject
	Arg    string // e.g. a request id
	Ref    string // platform reference of the message carrying the button (to edit it)
}

// Button is an inline button offered with a reply. Its callback data is
// "<action>:<arg>" and must stay within 64 bytes (Telegram).
type Button struct {
	Label  string
	Action string
	Arg    string
}

// Data is the button's callback data.
func (b Button) Data() string { return b.Action + ":" + b.Arg }

// Reply is one message herald says back.
type Reply struct {
	Text    string
	Buttons []Button
	// Edit asks the channel to replace the pressed button's message with
	// Text (the decision) instead of sending a new message.
	Edit bool
	// Toast is a short notice for the presser (answerCallbackQuery / card toast).
	Toast string
	// Retract asks the channel to delete the message being answered (it
	// carried a secret) where the platform allows; when it cannot, the
	// channel also sends Unretracted, asking the person to delete it.
	Retract     bool
	Unretracted string
}

// Sender lets the conversation core start a message in a chat that did
// not just write (approval prompts to admins, decisions to requesters).
// Each channel registers one for its addresses.
type Sender interface {
	Say(ctx context.Context, chat string, r Reply) error
}
