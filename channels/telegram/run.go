package telegram

import (
	"context"
	"errors"
	"github.com/herald-bridge/herald/conversation/text"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/store"
)

// allowedUpdates are the update kinds the bot asks for; callback_query is
// not in Telegram's default set.
var allowedUpdates = []string{"message", "callback_query"}

// Run takes updates until ctx is done: by long polling under the poller
// lease (a replica that does not hold it stands by), or by registering
// the webhook. Both register the command menu. Failures are retried with
// backoff up to MaxBackoff and shown by Status; Run returns nil once ctx
// is done, never an error that would stop other components.
func (c *Channel) Run(ctx context.Context) error {
	defer c.setStatus("stopped")
	b := c.backoff()
	for {
		_, err := c.identity(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		c.retrying(err)
		if !b.wait(ctx) {
			return nil
		}
	}
	c.setCommands(ctx)
	if c.o.Mode == ModeWebhook {
		c.runWebhook(ctx)
	} else {
		c.runPolling(ctx)
	}
	return nil
}

// retrying records a failure in the status and the log (once per class).
func (c *Channel) retrying(err error) {
	class := classify(err)
	if c.Status() != "retrying: "+class {
		c.log.Warn().Str("class", class).Str("error", c.scrub(err.Error())).Msg("telegram channel failing")
	}
	c.setStatus("retrying: " + class)
}

// runWebhook registers the webhook, retrying until Telegram accepts it,
// then waits for ctx.
func (c *Channel) runWebhook(ctx context.Context) {
	b := c.backoff()
	ok := c.retryCall(ctx, b, "setWebhook", func(ctx context.Context) error {
		_, err := c.bot.SetWebhook(ctx, &bot.SetWebhookParams{
			URL:            c.o.PublicURL + WebhookPath,
			SecretToken:    c.o.WebhookSecret,
			AllowedUpdates: allowedUpdates,
		})
		return err
	})
	if !ok {
		return
	}
	c.setStatus("webhook")
	<-ctx.Done()
}

// retryCall makes one Bot API call until it succeeds, waiting between
// tries as the backoff and any retry_after say. It reports false when ctx
// ends first.
func (c *Channel) retryCall(ctx context.Context, b *backoff, method string, call func(context.Context) error) bool {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := call(cctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.retrying(c.wrap(method, err))
		if !b.waitAtLeast(ctx, retryAfter(err)) {
			return false
		}
	}
	return false
}

// setCommands registers the command menu in English and Chinese. A
// failure is logged: the menu is a convenience.
func (c *Channel) setCommands(ctx context.Context) {
	for _, lang := range []string{"", "zh"} {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := c.bot.SetMyCommands(cctx, &bot.SetMyCommandsParams{Commands: menu(lang), LanguageCode: lang})
		cancel()
		if err != nil {
			c.log.Warn().Str("error", c.wrap("setMyCommands", err).Error()).Msg("telegram command menu")
			return
		}
	}
}

// commands is the command menu; each one's description is menu.<name> in
// the conversation's catalogue.
var commands = []string{"help", "watch", "remind", "tasks", "task", "pause", "resume", "delete", "run", "approve", "reject", "inbox", "read", "mute", "quiet", "digest", "cancel"}

// menu is the command menu in one language, "" being English.
func menu(lang string) []models.BotCommand {
	out := make([]models.BotCommand, len(commands))
	if lang == "" {
		lang = "en"
	}
	for i, name := range commands {
		out[i] = models.BotCommand{Command: name, Description: text.Format(lang, "menu."+name)}
	}
	return out
}

// classify names a failure for Status and logs.
func classify(err error) string {
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.Is(err, errStore), errors.Is(err, store.ErrUnavailable):
		return "store"
	case errors.As(err, &tooMany):
		return "rate_limited"
	case errors.Is(err, bot.ErrorUnauthorized), errors.Is(err, bot.ErrorNotFound):
		return "unauthorized"
	case errors.Is(err, bot.ErrorConflict):
		return "conflict"
	case errors.Is(err, bot.ErrorForbidden), errors.Is(err, bot.ErrorBadRequest):
		return "refused"
	case errors.Is(err, errServer):
		return "server_error"
	case errors.Is(err, errBadResponse):
		return "bad_response"
	}
	return "network"
}

// retryAfter is the wait Telegram asked for, if any.
func retryAfter(err error) time.Duration {
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) && tooMany.RetryAfter > 0 {
		return time.Duration(tooMany.RetryAfter) * time.Second
	}
	return 0
}

// backoff doubles a wait from base up to MaxBackoff.
type backoff struct {
	base, next time.Duration
}

func (c *Channel) backoff() *backoff { return &backoff{base: c.o.Backoff, next: c.o.Backoff} }

func (b *backoff) reset() { b.next = b.base }

// wait sleeps for the current step and doubles it; false when ctx ended.
func (b *backoff) wait(ctx context.Context) bool { return b.waitAtLeast(ctx, 0) }

func (b *backoff) waitAtLeast(ctx context.Context, min time.Duration) bool {
	d := max(b.next, min)
	b.next = max(b.next*2, b.base)
	if b.next > MaxBackoff {
		b.next = MaxBackoff
	}
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
