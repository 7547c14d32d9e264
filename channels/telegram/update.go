package telegram

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/address"
)

// MaxCallbackData is the most bytes Telegram carries in a button's
// callback data.
const MaxCallbackData = 64

// identity is what the bot knows about itself (from getMe).
type identity struct {
	ID       int64
	Username string // without the leading "@"
}

// inbound is one update mapped to the neutral model, with the platform
// coordinates needed to answer it.
type inbound struct {
	msg      conversation.Message
	chatID   int64
	callback string // callback query id ("" for a message)
	// editable is the message carrying the pressed button (0: none, e.g.
	// an inline-mode message).
	editable int
	replyTo  int    // message to reply to in a group (0: none)
	thread   int    // the forum topic the update came from (0: none)
	msgID    int    // the message itself (0 for a press): what Retract deletes
	fileID   string // a document sent in a private chat ("" none)
}

// chatOf returns the chat an update belongs to, for per-chat ordering.
func chatOf(u *models.Update) (int64, bool) {
	switch {
	case u.Message != nil:
		return u.Message.Chat.ID, true
	case u.CallbackQuery != nil:
		if m := u.CallbackQuery.Message.Message; m != nil {
			return m.Chat.ID, true
		}
		if m := u.CallbackQuery.Message.InaccessibleMessage; m != nil {
			return m.Chat.ID, true
		}
		return u.CallbackQuery.From.ID, true
	}
	return 0, false
}

// mapUpdate turns an update into a conversation message. ok is false for
// updates the bot does not answer: other update kinds, messages from bots
// or without a sender, channel posts, non-text messages, group messages
// not addressed to the bot, and commands naming another bot.
// A callback query is always returned when it carries a sender, so that
// it can be answered.
func mapUpdate(u *models.Update, me identity) (inbound, bool) {
	switch {
	case u.Message != nil:
		return mapMessage(u.ID, u.Message, me)
	case u.CallbackQuery != nil:
		return mapCallback(u.ID, u.CallbackQuery)
	}
	return inbound{}, false
}

func mapMessage(id int64, m *models.Message, me identity) (inbound, bool) {
	if m.From == nil || m.From.IsBot {
		return inbound{}, false
	}
	group := false
	switch m.Chat.Type {
	case models.ChatTypePrivate:
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		group = true
	default:
		return inbound{}, false
	}
	text := strings.TrimSpace(m.Text)
	// A document in a private chat is a file to import; its caption, if
	// any, is not a command.
	doc := m.Document != nil && m.Document.FileID != "" && !group
	if doc {
		text = ""
	}
	if text == "" && !doc {
		return inbound{}, false
	}
	cmdTarget, isCmd := commandTarget(text)
	if isCmd && cmdTarget != "" && !strings.EqualFold(cmdTarget, me.Username) {
		return inbound{}, false // /cmd@otherbot
	}
	text, leading := stripLeadingMention(text, me.Username)
	addressed := !group ||
		(isCmd && cmdTarget != "") ||
		leading ||
		mentions(m, me) ||
		(m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && me.ID != 0 && m.ReplyToMessage.From.ID == me.ID)
	if !addressed {
		return inbound{}, false
	}
	if leading {
		// "@bot /cmd@otherbot" still names another bot.
		if t, ok := commandTarget(text); ok && t != "" && !strings.EqualFold(t, me.Username) {
			return inbound{}, false
		}
	}
	in := inbound{
		msg: conversation.Message{
			Channel:   "telegram",
			ID:        strconv.FormatInt(id, 10),
			Principal: principal(m.From),
			Chat:      chatAddress(m.Chat.ID),
			Group:     group,
			Addressed: true,
			Text:      text,
			Lang:      lang(m.From.LanguageCode),
			Name:      displayName(m.From),
		},
		chatID: m.Chat.ID,
		msgID:  m.ID,
	}
	if group {
		in.replyTo = m.ID
		in.thread = topicOf(m)
		if in.thread != 0 {
			in.msg.Topic = address.TelegramTopic(m.Chat.ID, in.thread)
		}
	}
	if doc {
		in.fileID = m.Document.FileID
		in.msg.File = &conversation.File{Name: m.Document.FileName, Size: m.Document.FileSize}
	}
	return in, true
}

func mapCallback(id int64, q *models.CallbackQuery) (inbound, bool) {
	if q.ID == "" || q.From.ID == 0 || q.From.IsBot {
		return inbound{}, false
	}
	in := inbound{callback: q.ID}
	var chat models.Chat
	switch {
	case q.Message.Message != nil:
		chat, in.editable = q.Message.Message.Chat, q.Message.Message.ID
		in.thread = topicOf(q.Message.Message)
	case q.Message.InaccessibleMessage != nil:
		chat, in.editable = q.Message.InaccessibleMessage.Chat, q.Message.InaccessibleMessage.MessageID
	default:
		// A button on an inline-mode message: no chat to answer in.
		return in, true
	}
	action, arg, _ := strings.Cut(q.Data, ":")
	in.chatID = chat.ID
	in.msg = conversation.Message{
		Channel:   "telegram",
		ID:        strconv.FormatInt(id, 10),
		Principal: principal(&q.From),
		Chat:      chatAddress(chat.ID),
		Group:     chat.Type == models.ChatTypeGroup || chat.Type == models.ChatTypeSupergroup,
		Addressed: true,
		Lang:      lang(q.From.LanguageCode),
		Name:      displayName(&q.From),
	}
	if q.Data != "" && len(q.Data) <= MaxCallbackData {
		in.msg.Button = &conversation.Press{
			Action: action,
			Arg:    arg,
			Ref:    in.msg.Chat + ":" + strconv.Itoa(in.editable),
		}
	}
	return in, true
}

// topicOf returns the forum topic m was sent in, 0 when none. A
// message_thread_id alone is not a topic: replies outside topics carry
// their thread's root, and groups with topics turned off can send one;
// only is_topic_message says the message is in a topic.
func topicOf(m *models.Message) int {
	if !m.IsTopicMessage || m.MessageThreadID <= 0 || m.Chat.Type != models.ChatTypeSupergroup {
		return 0
	}
	return m.MessageThreadID
}

// commandTarget reports whether text starts with a bot command and which
// bot it names ("" when none): "/watch@herald_bot url" -> "herald_bot".
func commandTarget(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	head := text
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		head = text[:i]
	}
	_, target, _ := strings.Cut(head, "@")
	return target, true
}

// stripLeadingMention removes a leading "@username" (and the separator
// after it) from text, reporting whether there was one.
func stripLeadingMention(text, username string) (string, bool) {
	if username == "" || len(text) < len(username)+1 || text[0] != '@' {
		return text, false
	}
	if !strings.EqualFold(text[1:1+len(username)], username) {
		return text, false
	}
	rest := text[1+len(username):]
	if rest != "" {
		r := []rune(rest)[0]
		if isNameRune(r) {
			return text, false // @herald_bot2 is another name
		}
	}
	rest = strings.TrimLeftFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ':' || r == '，' || r == '：' })
	return rest, true
}

func isNameRune(r rune) bool {
	return r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
}

// mentions reports whether a mention entity in m names the bot.
func mentions(m *models.Message, me identity) bool {
	var units []uint16
	for _, e := range m.Entities {
		switch e.Type {
		case models.MessageEntityTypeTextMention:
			if e.User != nil && me.ID != 0 && e.User.ID == me.ID {
				return true
			}
		case models.MessageEntityTypeMention:
			if me.Username == "" {
				continue
			}
			if units == nil {
				units = utf16.Encode([]rune(m.Text))
			}
			if e.Offset < 0 || e.Length < 0 || e.Offset > len(units) || e.Length > len(units)-e.Offset {
				continue
			}
			s := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
			if strings.EqualFold(strings.TrimPrefix(s, "@"), me.Username) {
				return true
			}
		}
	}
	return false
}

func principal(u *models.User) string { return address.TelegramUser(u.ID) }

func chatAddress(id int64) string { return address.TelegramChat(id) }

// lang maps a Telegram language code to a conversation language; an
// absent code leaves the configured default.
func lang(code string) string {
	switch {
	case code == "":
		return ""
	case strings.HasPrefix(strings.ToLower(code), "zh"):
		return "zh"
	}
	return "en"
}

func displayName(u *models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" && u.Username != "" {
		name = "@" + u.Username
	}
	return name
}

// parseChat parses a telegram:chat:<id> address.
func parseChat(addr string) (int64, error) {
	id, err := address.ParseTelegramChat(addr)
	if err != nil {
		return 0, ErrNotTelegramChat
	}
	return id, nil
}

// parseTopic parses a telegram:chat:<id> address (thread 0) or a forum
// topic's telegram:chat:<id>:topic:<thread_id>.
func parseTopic(addr string) (int64, int, error) {
	id, thread, err := address.ParseTelegramTopic(addr)
	if err != nil || id == 0 {
		return 0, 0, ErrNotTelegramChat
	}
	return id, thread, nil
}
