package telegram

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/render"
)

// maxToast is the most characters answerCallbackQuery shows.
const maxToast = 200

// generalTopic is a forum's General topic, which the Bot API wants
// posted to without message_thread_id.
const generalTopic = 1

// maxReplyWait is the longest rate-limit wait a reply sits out before its
// one retry; a longer one fails the reply.
const maxReplyWait = 10 * time.Second

// Say sends r to chat, a "telegram:chat:<id>" address or a forum topic's
// "telegram:chat:<id>:topic:<thread_id>" (conversation.Sender).
// Edit is ignored: a message started here has nothing to replace.
func (c *Channel) Say(ctx context.Context, chat string, r conversation.Reply) error {
	id, thread, err := parseTopic(chat)
	if err != nil {
		return err
	}
	return c.send(ctx, id, thread, r, 0)
}

// keyboard builds the inline keyboard for buttons, refusing callback data
// Telegram would reject. Up to three buttons share a row.
func keyboard(buttons []conversation.Button) (*models.InlineKeyboardMarkup, error) {
	kb := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	if len(buttons) == 0 {
		return kb, nil
	}
	var row []models.InlineKeyboardButton
	for _, b := range buttons {
		data := b.Data()
		if b.Action == "" || len(data) > MaxCallbackData || !utf8.ValidString(data) {
			return nil, ErrCallbackData
		}
		label := strings.TrimSpace(b.Label)
		if label == "" {
			label = b.Action
		}
		row = append(row, models.InlineKeyboardButton{Text: label, CallbackData: data})
	}
	if len(row) <= 3 {
		kb.InlineKeyboard = append(kb.InlineKeyboard, row)
		return kb, nil
	}
	for _, b := range row {
		kb.InlineKeyboard = append(kb.InlineKeyboard, []models.InlineKeyboardButton{b})
	}
	return kb, nil
}

// send sends r as one or more HTML messages; the keyboard rides on the
// last part. replyTo threads the first part under a message (groups);
// every part goes to forum topic thread when it is not 0 (the General
// topic, 1, is posted to without naming it).
//
// A group that became a supergroup is followed: replies go to the
// supergroup once the move is known, and a part Telegram refuses with
// migrate_to_chat_id (provably not sent) is sent once more to the new
// chat, which is remembered for later replies. A second move is not
// followed.
func (c *Channel) send(ctx context.Context, chat int64, thread int, r conversation.Reply, replyTo int) error {
	kb, err := keyboard(r.Buttons)
	if err != nil {
		return err
	}
	parts := split(render.EscapeHTML(strings.TrimSpace(r.Text)), render.TelegramLimit)
	if len(parts) == 0 {
		return nil // nothing to say
	}
	to := c.resolve(ctx, chat)
	followed := to != chat
	if followed {
		replyTo = 0 // the message replied to stayed in the old group
		thread = 0  // and a basic group has no topics
	}
	if thread == generalTopic {
		thread = 0
	}
	for i, p := range parts {
		params := &bot.SendMessageParams{
			ChatID:             to,
			Text:               p,
			ParseMode:          models.ParseModeHTML,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
			MessageThreadID:    thread,
		}
		if i == 0 && replyTo != 0 {
			params.ReplyParameters = &models.ReplyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
		}
		if i == len(parts)-1 && len(r.Buttons) > 0 {
			params.ReplyMarkup = kb
		}
		err := c.sendWaiting(ctx, params)
		var mig *bot.MigrateError
		if errors.As(err, &mig) && !followed && mig.MigrateToChatID != 0 && int64(mig.MigrateToChatID) != to {
			followed = true
			to = int64(mig.MigrateToChatID)
			if rerr := c.remember(ctx, chat, to); rerr != nil {
				c.log.Warn().Str("error", rerr.Error()).Msg("telegram chat migration not persisted")
			}
			params.ChatID = to
			params.ReplyParameters = nil
			params.MessageThreadID = 0
			err = c.sendWaiting(ctx, params)
		}
		if err != nil {
			return errors.Join(ErrSend, c.wrap("sendMessage", err))
		}
	}
	return nil
}

// sendWaiting sends one part, sitting out one short rate limit.
func (c *Channel) sendWaiting(ctx context.Context, params *bot.SendMessageParams) error {
	err := c.sendPart(ctx, params)
	if d := retryAfter(err); d > 0 && d <= maxReplyWait && c.wait(ctx, d) {
		// Telegram refused before sending; the one retry it invites.
		err = c.sendPart(ctx, params)
	}
	return err
}

func (c *Channel) sendPart(ctx context.Context, params *bot.SendMessageParams) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.bot.SendMessage(ctx, params)
	return err
}

// edit replaces the text of the message carrying a pressed button and
// swaps its keyboard for r's buttons (none: the keyboard goes away).
func (c *Channel) edit(ctx context.Context, chat int64, msgID int, r conversation.Reply) error {
	kb, err := keyboard(r.Buttons)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	text := strings.TrimSpace(r.Text)
	if text == "" {
		_, err = c.bot.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: chat, MessageID: msgID, ReplyMarkup: kb})
	} else {
		parts := split(render.EscapeHTML(text), render.TelegramLimit)
		_, err = c.bot.EditMessageText(ctx, &bot.EditMessageTextParams{
			ChatID:             chat,
			MessageID:          msgID,
			Text:               parts[0],
			ParseMode:          models.ParseModeHTML,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
			ReplyMarkup:        kb,
		})
	}
	if err != nil && !notModified(err) {
		return errors.Join(ErrSend, c.wrap("editMessage", err))
	}
	return nil
}

// notModified reports Telegram's answer to an edit that changes nothing,
// which leaves the message as wanted.
func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

// retract deletes the message in answered (it carried a secret); when
// Telegram will not (too old, or no right to in a group), r.Unretracted
// asks the person to delete it.
func (c *Channel) retract(ctx context.Context, in inbound, r conversation.Reply) {
	if in.msgID == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	_, err := c.bot.DeleteMessage(cctx, &bot.DeleteMessageParams{ChatID: in.chatID, MessageID: in.msgID})
	cancel()
	if err == nil {
		return
	}
	c.log.Warn().Str("error", c.wrap("deleteMessage", err).Error()).Msg("telegram: a message carrying a secret was not deleted")
	if r.Unretracted != "" {
		if err := c.send(ctx, in.chatID, in.thread, conversation.Reply{Text: r.Unretracted}, in.replyTo); err != nil {
			c.log.Warn().Str("error", err.Error()).Msg("telegram reply")
		}
	}
}

// answer stops the presser's progress indicator, with an optional toast.
func (c *Channel) answer(ctx context.Context, id, toast string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if n := []rune(toast); len(n) > maxToast {
		toast = string(n[:maxToast-1]) + "…"
	}
	_, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: id, Text: toast})
	if err != nil {
		return errors.Join(ErrSend, c.wrap("answerCallbackQuery", err))
	}
	return nil
}

// split cuts escaped HTML text into parts of at most limit characters as
// Telegram counts them, at line breaks where possible and never inside an
// entity such as "&amp;". Empty text yields no parts.
func split(s string, limit int) []string {
	var parts []string
	for s != "" {
		if render.Length(s) <= limit {
			parts = append(parts, s)
			break
		}
		n := fit(s, limit)
		atBreak := s[n] == '\n'
		if nl := strings.LastIndexByte(s[:n], '\n'); !atBreak && nl > 0 {
			n = nl
		} else if amp := strings.LastIndexByte(s[:n], '&'); amp > 0 && !strings.Contains(s[amp:n], ";") {
			n = amp
		}
		if head := strings.TrimRight(s[:n], "\n"); head != "" {
			parts = append(parts, head)
		}
		s = strings.TrimLeft(s[n:], "\n")
	}
	return parts
}

// fit returns the byte length of the longest prefix of s within limit
// characters; at least one rune.
func fit(s string, limit int) int {
	n := 0
	for i, r := range s {
		w := render.Length(string(r))
		if n+w > limit {
			if i == 0 {
				_, size := utf8.DecodeRuneInString(s)
				return size
			}
			return i
		}
		n += w
	}
	return len(s)
}
