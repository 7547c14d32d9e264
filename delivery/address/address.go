// Package address parses and prints the two kinds of names herald gives
// the parties of a conversation or a push (docs/configuration.md, Configuration):
//
//   - principals, who speaks: telegram:<user_id>, feishu:<open_id>,
//     console:<name>, agent:<name> (an MCP client holding an agent
//     token); policy lists also take the patterns telegram:*, feishu:*,
//     console:*, agent:*;
//   - recipient addresses, where a notice goes: telegram:chat:<chat_id>,
//     telegram:chat:<chat_id>:topic:<thread_id> (a topic of a forum
//     group), feishu:chat:<chat_id>, feishu:user:<open_id>,
//     inbox:<principal>.
//
// It is the one place these spellings live, and it depends on nothing
// else in herald. A new principal kind is one line in principalKinds.
package address

import (
	"errors"
	"strconv"
	"strings"
)

// A principalKind is one way of being a principal: "<name>:<id>".
type principalKind struct {
	name   string
	idName string // what the id is called in error messages
	// valid reports whether id is well formed (it is never empty and
	// never holds white space).
	valid func(id string) bool
	// chat is the private chat where herald can start a conversation
	// with the principal; nil when there is none.
	chat func(id string) string
}

// principalKinds lists every principal kind, in the order error messages
// name them.
var principalKinds = []principalKind{
	{"telegram", "user_id", isUserID, func(id string) string { return telegramChat + id }},
	{"feishu", "open_id", anyID, func(id string) string { return feishuUser + id }},
	{"console", "name", anyID, func(id string) string { return "console:" + id }},
	{"agent", "name", IsAgentName, nil},
}

// Recipient address prefixes.
const (
	telegramChat = "telegram:chat:"
	topicInfix   = ":topic:"
	feishuChat   = "feishu:chat:"
	feishuUser   = "feishu:user:"
	inbox        = "inbox:"
)

// Kind names the transport of a literal recipient address.
type Kind string

const (
	Telegram Kind = "telegram" // telegram:chat:<chat_id>[:topic:<thread_id>]
	Feishu   Kind = "feishu"   // feishu:chat:<chat_id> / feishu:user:<open_id>
	Inbox    Kind = "inbox"    // inbox:<principal>
)

// Feishu receive id types.
const (
	ChatID = "chat_id"
	OpenID = "open_id"
)

// Address is a parsed literal recipient address.
type Address struct {
	Kind Kind
	// Telegram: chat id. Feishu: chat_id or open_id (see IDType).
	// Inbox: principal.
	ID     string
	IDType string // feishu: ChatID | OpenID
	// Topic is a Telegram forum topic's thread id ("" for the whole
	// chat). Topic 1 is the General topic.
	Topic string
}

// String prints a as written in config.
func (a Address) String() string {
	switch a.Kind {
	case Telegram:
		if a.Topic != "" {
			return telegramChat + a.ID + topicInfix + a.Topic
		}
		return telegramChat + a.ID
	case Feishu:
		if a.IDType == OpenID {
			return feishuUser + a.ID
		}
		return feishuChat + a.ID
	case Inbox:
		return inbox + a.ID
	}
	return ""
}

// Parse parses a literal recipient address.
func Parse(s string) (Address, error) {
	if id, ok := strings.CutPrefix(s, telegramChat); ok {
		id, topic, isTopic := strings.Cut(id, topicInfix)
		if !isChatID(id) {
			return Address{}, errors.New("telegram chat id must be an integer")
		}
		if isTopic && !isThreadID(topic) {
			return Address{}, errors.New("telegram topic id must be a positive integer")
		}
		return Address{Kind: Telegram, ID: id, Topic: topic}, nil
	}
	if id, ok := strings.CutPrefix(s, feishuChat); ok {
		if id == "" {
			return Address{}, errors.New("feishu chat id is empty")
		}
		return Address{Kind: Feishu, ID: id, IDType: ChatID}, nil
	}
	if id, ok := strings.CutPrefix(s, feishuUser); ok {
		if id == "" {
			return Address{}, errors.New("feishu open_id is empty")
		}
		return Address{Kind: Feishu, ID: id, IDType: OpenID}, nil
	}
	if p, ok := strings.CutPrefix(s, inbox); ok {
		if !ValidPrincipal(p) {
			return Address{}, errors.New("inbox principal must look like " + Forms())
		}
		return Address{Kind: Inbox, ID: p}, nil
	}
	return Address{}, errors.New("not a recipient address (want telegram:chat:<id>, telegram:chat:<id>:topic:<thread_id>, feishu:chat:<id>, feishu:user:<open_id> or inbox:<principal>)")
}

// IsChat reports whether s is a chat's address (Telegram chat, Feishu
// chat), as a group's conversation is kept under. A forum topic's
// address is not: the conversation is the group's.
func IsChat(s string) bool {
	a, err := Parse(s)
	return err == nil && ((a.Kind == Telegram && a.Topic == "") || a.IDType == ChatID)
}

// IsLiteral reports whether s is written as an address rather than as the
// name of a configured recipient.
func IsLiteral(s string) bool {
	for _, k := range []Kind{Telegram, Feishu, Inbox} {
		if strings.HasPrefix(s, string(k)+":") {
			return true
		}
	}
	return false
}

// TelegramChat prints the address of Telegram chat id.
func TelegramChat(id int64) string { return telegramChat + strconv.FormatInt(id, 10) }

// ErrNotTelegramChat means an address is not telegram:chat:<non-zero id>.
var ErrNotTelegramChat = errors.New("not a telegram:chat:<id> address")

// ParseTelegramChat returns the chat id of a telegram:chat:<id> address.
func ParseTelegramChat(s string) (int64, error) {
	s, ok := strings.CutPrefix(s, telegramChat)
	if !ok {
		return 0, ErrNotTelegramChat
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id == 0 {
		return 0, ErrNotTelegramChat
	}
	return id, nil
}

// TelegramTopic prints the address of forum topic thread in Telegram
// chat id.
func TelegramTopic(id int64, thread int) string {
	return telegramChat + strconv.FormatInt(id, 10) + topicInfix + strconv.Itoa(thread)
}

// ErrNotTelegramTopic means an address is neither telegram:chat:<id> nor
// telegram:chat:<id>:topic:<thread_id>.
var ErrNotTelegramTopic = errors.New("not a telegram:chat:<id>[:topic:<thread_id>] address")

// ParseTelegramTopic returns the chat id and forum topic of a
// telegram:chat:<id>:topic:<thread_id> address; a telegram:chat:<id>
// address has thread 0.
func ParseTelegramTopic(s string) (chat int64, thread int, err error) {
	rest, ok := strings.CutPrefix(s, telegramChat)
	if !ok {
		return 0, 0, ErrNotTelegramTopic
	}
	id, topic, isTopic := strings.Cut(rest, topicInfix)
	chat, err = ParseTelegramChat(telegramChat + id)
	if err != nil {
		return 0, 0, ErrNotTelegramTopic
	}
	if !isTopic {
		return chat, 0, nil
	}
	if !isThreadID(topic) {
		return 0, 0, ErrNotTelegramTopic
	}
	thread, err = strconv.Atoi(topic)
	if err != nil {
		return 0, 0, ErrNotTelegramTopic
	}
	return chat, thread, nil
}

// WholeChat returns the chat a forum topic's address belongs to, and any
// other address as it is: a topic keeps no settings of its own.
func WholeChat(s string) string {
	if a, err := Parse(s); err == nil && a.Kind == Telegram && a.Topic != "" {
		return telegramChat + a.ID
	}
	return s
}

// FeishuChat prints the address of Feishu chat chatID.
func FeishuChat(chatID string) string { return feishuChat + chatID }

// InboxOf prints the inbox address of principal.
func InboxOf(principal string) string { return inbox + principal }

// IsInbox reports whether recipient is an inbox address (anyone's).
func IsInbox(recipient string) bool { return strings.HasPrefix(recipient, inbox) }

// TelegramUser prints the principal of Telegram user id.
func TelegramUser(id int64) string { return "telegram:" + strconv.FormatInt(id, 10) }

// FeishuUser prints the principal of Feishu user openID.
func FeishuUser(openID string) string { return "feishu:" + openID }

func kindOf(principal string) (principalKind, string, bool) {
	name, id, ok := strings.Cut(principal, ":")
	if !ok {
		return principalKind{}, "", false
	}
	for _, k := range principalKinds {
		if k.name == name {
			return k, id, true
		}
	}
	return principalKind{}, "", false
}

// ValidPrincipal reports whether p is a well-formed principal of a known
// kind.
func ValidPrincipal(p string) bool {
	k, id, ok := kindOf(p)
	return ok && id != "" && !strings.ContainsAny(id, " \t\n") && k.valid(id)
}

// ValidPattern reports whether p may stand in a policy list: a principal
// or, when wildcard is set, "<kind>:*" for any principal of a kind.
func ValidPattern(p string, wildcard bool) bool {
	if _, id, ok := kindOf(p); ok && wildcard && id == "*" {
		return true
	}
	return ValidPrincipal(p) && !strings.Contains(p, "*")
}

// Match reports whether principal matches the policy pattern pat: equal,
// "*", or a prefix ending in "*".
func Match(pat, principal string) bool {
	if pat == principal || pat == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pat, "*"); ok {
		return strings.HasPrefix(principal, prefix)
	}
	return false
}

// Forms names the principal forms for error messages:
// "telegram:<user_id>, feishu:<open_id> or console:<name>".
func Forms() string {
	return list(func(k principalKind) string { return k.name + ":<" + k.idName + ">" })
}

// Patterns names the wildcard patterns for error messages:
// "telegram:*, feishu:*, console:*".
func Patterns() string {
	out := make([]string, len(principalKinds))
	for i, k := range principalKinds {
		out[i] = k.name + ":*"
	}
	return strings.Join(out, ", ")
}

func list(f func(principalKind) string) string {
	var b strings.Builder
	for i, k := range principalKinds {
		switch {
		case i == 0:
		case i == len(principalKinds)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(f(k))
	}
	return b.String()
}

// ChatOf returns the private chat address of a principal, where herald
// can start a conversation with it ("" when there is none).
func ChatOf(principal string) string {
	k, id, ok := kindOf(principal)
	if !ok || id == "" || k.chat == nil {
		return ""
	}
	return k.chat(id)
}

func anyID(string) bool { return true }

// AgentPrefix starts every agent principal.
const AgentPrefix = "agent:"

// IsAgent reports whether principal is an agent's (agent:<name>).
func IsAgent(principal string) bool { return strings.HasPrefix(principal, AgentPrefix) }

// IsAgentName reports whether name may name an agent: 1 to 64 letters,
// digits, '.', '_' or '-', starting with a letter or digit.
func IsAgentName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// isUserID: a Telegram user id is a positive integer.
func isUserID(id string) bool { return isChatID(id) && !strings.HasPrefix(id, "-") }

// isThreadID: a forum topic's thread id is a positive integer (a
// message id) that fits an int32.
func isThreadID(s string) bool {
	if s == "" || len(s) > 10 || s[0] == '0' {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= 1<<31-1
}

// isChatID: a Telegram chat id is an integer (groups are negative).
func isChatID(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
