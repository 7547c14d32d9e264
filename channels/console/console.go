// Package console is the console chat channel: people talk to herald from
// the command line (`herald chat --as NAME`) through the admin API. The
// principal and the chat address are both console:NAME. Messages herald
// starts on its own (approval prompts, decisions) wait in a bounded
// per-name outbox in the channel-state storage object until polled.
package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/webhook"
)

// OutboxCap is the most replies kept per name; older ones are dropped first.
const OutboxCap = 100

// MaxText bounds one typed message.
const MaxText = 4096

// ErrBadName reports a console name outside letters, digits and - _ . (at most 32).
var ErrBadName = errors.New("console: a name has 1-32 letters, digits, '-', '_' or '.'")

// outboxMu serialises outbox read-modify-writes in this process: every
// Channel over the same storage shares it.
var outboxMu sync.Mutex

// Channel is the console Sender.
type Channel struct {
	kv store.KV
	// pending says whether a request still awaits a decision (nil: all do).
	pending func(ctx context.Context, requestID string) bool
}

var _ conversation.Sender = (*Channel)(nil)

// New returns the console channel keeping outboxes in kv (store.Channels()).
func New(kv store.KV) *Channel { return &Channel{kv: kv} }

// ValidName reports whether name may follow "console:".
func ValidName(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

func outboxKey(name string) string { return "console/outbox/" + name }

// Reply is a reply as the admin API shows it.
type Reply struct {
	Text    string   `json:"text"`
	Buttons []Button `json:"buttons,omitempty"`
	// Request is the request an approval prompt asks about; a prompt whose
	// request was decided before it was read is dropped from the outbox.
	Request string `json:"request,omitempty"`
}

// Button is an offered button; typing "/<action> <arg>" presses it.
type Button struct {
	Label  string `json:"label"`
	Action string `json:"action"`
	Arg    string `json:"arg"`
}

func view(r conversation.Reply) (Reply, bool) {
	text := r.Text
	if text == "" {
		text = r.Toast
	}
	if text == "" && len(r.Buttons) == 0 {
		return Reply{}, false
	}
	out := Reply{Text: text}
	for _, b := range r.Buttons {
		out.Buttons = append(out.Buttons, Button{Label: b.Label, Action: b.Action, Arg: b.Arg})
		if b.Action == "approve" {
			out.Request = b.Arg
		}
	}
	return out, true
}

// Say appends r to the outbox of chat console:NAME.
func (c *Channel) Say(ctx context.Context, chat string, r conversation.Reply) error {
	name, ok := strings.CutPrefix(chat, "console:")
	if !ok || !ValidName(name) {
		return fmt.Errorf("console: not a console chat address")
	}
	v, ok := view(r)
	if !ok {
		return nil
	}
	outboxMu.Lock()
	defer outboxMu.Unlock()
	box, err := c.read(ctx, name)
	if err != nil {
		return err
	}
	box = append(box, v)
	if len(box) > OutboxCap {
		box = box[len(box)-OutboxCap:]
	}
	b, err := json.Marshal(box)
	if err != nil {
		return err
	}
	if err := c.kv.Put(ctx, outboxKey(name), b, 0); err != nil {
		return fmt.Errorf("console: store outbox: %w", err)
	}
	return nil
}

func (c *Channel) read(ctx context.Context, name string) ([]Reply, error) {
	b, err := c.kv.Get(ctx, outboxKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("console: read outbox: %w", err)
	}
	var box []Reply
	if err := json.Unmarshal(b, &box); err != nil {
		return nil, nil // an unreadable outbox is dropped, not fatal
	}
	return box, nil
}

// Drain returns and empties the outbox of console:NAME, oldest first.
func (c *Channel) Drain(ctx context.Context, name string) ([]Reply, error) {
	if !ValidName(name) {
		return nil, ErrBadName
	}
	outboxMu.Lock()
	defer outboxMu.Unlock()
	box, err := c.read(ctx, name)
	if err != nil || len(box) == 0 {
		return []Reply{}, err
	}
	if err := c.kv.Delete(ctx, outboxKey(name)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("console: clear outbox: %w", err)
	}
	out := box[:0]
	for _, r := range box {
		if r.Request != "" && c.pending != nil && !c.pending(ctx, r.Request) {
			continue // decided while it waited here: nothing left to ask
		}
		out = append(out, r)
	}
	return out, nil
}

// Answer is the result of chat.send and chat.poll.
type Answer struct {
	Replies []Reply `json:"replies"`
}

// Mount registers the console as herald's console Sender on core and the
// admin operations chat.send ({"as","text"[,"lang"]} → the replies) and
// chat.poll ({"as"} → the outbox, drained).
func Mount(a *webhook.Admin, core *conversation.Core, kv store.KV) {
	ch := New(kv)
	ch.pending = core.Pending
	core.AddSender("console", ch)
	a.Register("chat.send", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			As   string `json:"as"`
			Text string `json:"text"`
			Lang string `json:"lang"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, webhook.BadInput("send {\"as\": NAME, \"text\": TEXT}")
		}
		if !ValidName(in.As) {
			return nil, webhook.BadInput(ErrBadName.Error())
		}
		if len(in.Text) > MaxText {
			return nil, webhook.BadInput(fmt.Sprintf("a message has at most %d bytes", MaxText))
		}
		addr := "console:" + in.As
		replies := core.Handle(ctx, conversation.Message{
			Channel: "console", Principal: addr, Chat: addr, Text: in.Text, Lang: in.Lang, Name: in.As,
		})
		out := Answer{Replies: []Reply{}}
		for _, r := range replies {
			if v, ok := view(r); ok {
				out.Replies = append(out.Replies, v)
			}
		}
		return out, nil
	})
	a.Register("chat.poll", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			As string `json:"as"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, webhook.BadInput("send {\"as\": NAME}")
		}
		if !ValidName(in.As) {
			return nil, webhook.BadInput(ErrBadName.Error())
		}
		box, err := ch.Drain(ctx, in.As)
		if err != nil {
			return nil, err
		}
		return Answer{Replies: box}, nil
	})
}
