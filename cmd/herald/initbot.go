package main

// The part of `herald init` that finds the admin's Telegram user id: it
// asks the Bot API who the bot is, then waits for the next message sent
// to it and reads the sender's id. The token is part of every Bot API URL,
// so no error here carries a URL.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs"
)

// botPollSeconds is the long-poll timeout of one getUpdates call.
const botPollSeconds = 10

// initBot is a Telegram Bot API client just big enough for init.
type initBot struct {
	base   string // API base URL, default configs.DefaultTelegramAPIURL
	token  string
	client *http.Client
}

func newInitBot(base, token string) *initBot {
	if base == "" {
		base = configs.DefaultTelegramAPIURL
	}
	return &initBot{base: strings.TrimRight(base, "/"), token: token,
		client: &http.Client{Timeout: (botPollSeconds + 10) * time.Second}}
}

// botUser is a Telegram user as the Bot API describes one.
type botUser struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// describe names u for a person: "Alice (@alice)".
func (u botUser) describe() string {
	name := u.FirstName
	if u.Username != "" {
		name += " (@" + u.Username + ")"
	}
	return strings.TrimSpace(name)
}

type botUpdate struct {
	UpdateID int64 `json:"update_id"`
	Message  *struct {
		From *botUser `json:"from"`
		Text string   `json:"text"`
	} `json:"message"`
}

// call invokes one Bot API method and decodes its result into out.
func (b *initBot) call(ctx context.Context, method string, params url.Values, out any) error {
	u := b.base + "/bot" + b.token + "/" + method
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("telegram %s: bad API URL", method)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which holds the token
		}
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	defer resp.Body.Close()
	var body struct {
		OK          bool            `json:"ok"`
		Description string          `json:"description"`
		Result      json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return fmt.Errorf("telegram %s: HTTP %d, unreadable answer", method, resp.StatusCode)
	}
	if !body.OK {
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("telegram %s: the token was refused (HTTP %d)", method, resp.StatusCode)
		}
		return fmt.Errorf("telegram %s: HTTP %d: %s", method, resp.StatusCode, body.Description)
	}
	if err := json.Unmarshal(body.Result, out); err != nil {
		return fmt.Errorf("telegram %s: unexpected result", method)
	}
	return nil
}

// me returns the bot itself.
func (b *initBot) me(ctx context.Context) (botUser, error) {
	var u botUser
	err := b.call(ctx, "getMe", nil, &u)
	return u, err
}

// updates long-polls for updates from offset on.
func (b *initBot) updates(ctx context.Context, offset int64, timeout int) ([]botUpdate, error) {
	var ups []botUpdate
	p := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "timeout": {strconv.Itoa(timeout)},
		"allowed_updates": {`["message"]`}}
	err := b.call(ctx, "getUpdates", p, &ups)
	return ups, err
}

// errStartSkipped: the person ended the wait (Enter or Ctrl-C) before a
// message came.
var errStartSkipped = errors.New("stopped waiting")

// waitForStart waits for the next message to the bot, at most wait, and
// returns its sender. Updates already queued are skipped; the message
// found is confirmed, so the service does not answer it later. A line on
// lines (Enter) or ctx's end stops the wait with errStartSkipped.
func (b *initBot) waitForStart(ctx context.Context, wait time.Duration, lines <-chan string, ready func()) (botUser, error) {
	// offset -1 drops every queued update but the last one; polling
	// from after it sees only what is sent from now on.
	queued, err := b.updates(ctx, -1, 0)
	if err != nil {
		return botUser{}, err
	}
	var offset int64
	if n := len(queued); n > 0 {
		offset = queued[n-1].UpdateID + 1
	}
	ready()

	pollCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type found struct {
		user botUser
		next int64
		err  error
	}
	done := make(chan found, 1)
	go func() {
		for {
			ups, err := b.updates(pollCtx, offset, botPollSeconds)
			if err != nil {
				done <- found{err: err}
				return
			}
			for _, u := range ups {
				offset = u.UpdateID + 1
				if m := u.Message; m != nil && m.From != nil && !m.From.IsBot {
					done <- found{user: *m.From, next: offset}
					return
				}
			}
		}
	}()
	select {
	case f := <-done:
		if f.err != nil {
			if pollCtx.Err() != nil && ctx.Err() == nil {
				return botUser{}, fmt.Errorf("no message came within %s", wait)
			}
			if ctx.Err() != nil {
				return botUser{}, errStartSkipped
			}
			return botUser{}, f.err
		}
		// Confirm it: a getUpdates with a higher offset.
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_, _ = b.updates(cctx, f.next, 0)
		return f.user, nil
	case <-lines:
		cancel()
		<-done
		return botUser{}, errStartSkipped
	case <-ctx.Done():
		cancel()
		<-done
		return botUser{}, errStartSkipped
	}
}
