package telegram

import (
	"context"
	"errors"
	"fmt"
	"github.com/herald-bridge/herald/conversation/text"
	"strconv"

	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/conversation"
)

// dedupNS is the dedup namespace of update ids.
const dedupNS = "telegram"

// errStore marks a failure to claim an update: nothing was handled and
// the update must be offered again.
var errStore = errors.New("telegram: update claim failed")

// process handles one update: map it, claim its update_id, run the turn
// and answer. It returns an error only when the update was not claimed
// (or a group's move to a supergroup not recorded) and must be offered
// again; a failed answer is logged, since the turn already ran.
func (c *Channel) process(ctx context.Context, u *models.Update, me identity) error {
	if old, to, ok := migration(u.Message); ok {
		// Recording the move is idempotent, so the update needs no claim;
		// when it cannot be recorded the update is offered again.
		if err := c.remember(ctx, old, to); err != nil {
			return fmt.Errorf("%w: %w", errStore, err)
		}
		return nil
	}
	in, ok := mapUpdate(u, me)
	if !ok {
		return nil
	}
	if in.fileID != "" {
		id := in.fileID
		in.msg.File.Fetch = func(ctx context.Context, max int64) ([]byte, error) { return c.download(ctx, id, max) }
	}
	chat, _ := chatOf(u)
	unlock := c.chats.Lock(chat)
	defer unlock()
	if err := ctx.Err(); err != nil {
		return err // stopping: leave the update unclaimed for the next poller
	}
	first, err := c.o.Store.Dedup().Mark(ctx, dedupNS, strconv.FormatInt(u.ID, 10), DedupTTL)
	if err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	if !first {
		c.log.Debug().Int64("update", u.ID).Msg("telegram update repeated")
		return nil
	}
	if in.callback != "" {
		c.pressed(ctx, in)
		return nil
	}
	for _, r := range c.o.Handler.Handle(ctx, in.msg) {
		if r.Retract {
			c.retract(ctx, in, r)
		}
		if err := c.send(ctx, in.chatID, in.thread, r, in.replyTo); err != nil {
			c.log.Warn().Str("error", err.Error()).Bool("group", in.msg.Group).Msg("telegram reply")
		}
	}
	return nil
}

// pressed handles a callback query: the turn, then the callback answer
// (always, so the presser's client stops waiting), then the replies.
func (c *Channel) pressed(ctx context.Context, in inbound) {
	var replies []conversation.Reply
	toast := ""
	switch {
	case in.chatID == 0:
		// Inline-mode message: no chat to answer in.
	case in.msg.Button == nil:
		toast = text.Format(in.msg.Lang, "button.no_longer_valid")
	default:
		replies = c.o.Handler.Handle(ctx, in.msg)
	}
	for _, r := range replies {
		if toast == "" && r.Toast != "" {
			toast = r.Toast
		}
	}
	if err := c.answer(ctx, in.callback, toast); err != nil {
		c.log.Warn().Str("error", err.Error()).Msg("telegram callback answer")
	}
	for _, r := range replies {
		var err error
		switch {
		case r.Edit && in.editable != 0:
			err = c.edit(ctx, in.chatID, in.editable, r)
			if err != nil && r.Text != "" && ctx.Err() == nil {
				// Too old or gone to edit: say it as a new message.
				c.log.Debug().Str("error", err.Error()).Msg("telegram edit failed; sending instead")
				err = c.send(ctx, in.chatID, in.thread, r, 0)
			}
		case r.Text != "":
			err = c.send(ctx, in.chatID, in.thread, r, 0)
		}
		if err != nil {
			c.log.Warn().Str("error", err.Error()).Bool("edit", r.Edit).Msg("telegram reply")
		}
	}
}
