package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/herald-bridge/herald/store"
)

// StatusStandby is the status of a replica that does not poll because
// another one holds the poller lease.
const StatusStandby = "standby (another replica polls)"

// updateRetention is how long Telegram keeps an unconfirmed update.
const updateRetention = 24 * time.Hour

// maxUpdatesBody caps one getUpdates answer (100 updates).
const maxUpdatesBody = 32 << 20

var (
	errServer      = errors.New("telegram: server error")
	errBadResponse = errors.New("telegram: malformed response")
)

// runPolling polls while this replica holds the poller lease and stands
// by while another one does.
func (c *Channel) runPolling(ctx context.Context) {
	b := c.backoff()
	for ctx.Err() == nil {
		l, err := c.o.Store.Leases().Acquire(ctx, PollerLease, c.o.Holder, c.o.LeaseTTL)
		switch {
		case errors.Is(err, store.ErrLeaseHeld):
			c.setStatus(StatusStandby)
			b.reset()
			sleep(ctx, c.o.LeaseTTL/3)
			continue
		case err != nil:
			if ctx.Err() == nil {
				c.retrying(fmt.Errorf("%w: %w", errStore, err))
				b.wait(ctx)
			}
			continue
		}
		c.pollHeld(ctx, l)
	}
}

// pollHeld polls until ctx ends or the lease is lost, then releases it.
func (c *Channel) pollHeld(ctx context.Context, l store.Lease) {
	lctx, cancel := context.WithCancel(ctx)
	last := make(chan store.Lease, 1)
	go func() { last <- c.keepLease(lctx, cancel, l) }()
	c.poll(lctx)
	cancel()
	l = <-last
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if err := c.o.Store.Leases().Release(rctx, l); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		c.log.Warn().Str("error", err.Error()).Msg("telegram poller lease release")
	}
}

// keepLease renews l at a third of its lifetime and cancels polling when
// it is lost, or when renewal kept failing until it expired. It returns
// the last lease held.
func (c *Channel) keepLease(ctx context.Context, cancel context.CancelFunc, l store.Lease) store.Lease {
	t := time.NewTicker(max(c.o.LeaseTTL/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return l
		case <-t.C:
		}
		nl, err := c.o.Store.Leases().Renew(ctx, l, c.o.LeaseTTL)
		switch {
		case err == nil:
			l = nl
		case errors.Is(err, store.ErrLeaseLost):
			c.log.Warn().Msg("telegram poller lease lost")
			cancel()
			return l
		case ctx.Err() != nil:
			return l
		case !time.Now().Before(l.Expires):
			c.log.Warn().Str("error", err.Error()).Msg("telegram poller lease expired")
			cancel()
			return l
		}
	}
}

// poll runs the getUpdates loop. The offset sent is one past the last
// handled update, so Telegram keeps offering anything not yet handled.
func (c *Channel) poll(ctx context.Context) {
	b := c.backoff()
	c.retryCall(ctx, b, "deleteWebhook", func(ctx context.Context) error {
		_, err := c.bot.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		return err
	})
	b.reset()
	var offset int64
	for ctx.Err() == nil {
		o, err := c.loadOffset(ctx)
		if err == nil {
			offset = o
			break
		}
		if ctx.Err() != nil {
			return
		}
		c.retrying(err)
		b.wait(ctx)
	}
	b.reset()
	c.setStatus("polling")
	for ctx.Err() == nil {
		me, err := c.identity(ctx)
		if err == nil {
			var ups []*models.Update
			ups, err = c.getUpdates(ctx, offset)
			if err == nil {
				err = c.handleBatch(ctx, ups, me)
			}
			if err == nil && len(ups) > 0 {
				next := offset
				for _, u := range ups {
					next = max(next, u.ID+1)
				}
				offset = next
				if err := c.saveOffset(ctx, offset); err != nil {
					// Every update up to offset is handled and claimed, so
					// an older persisted offset only makes Telegram offer
					// them again to be skipped.
					c.log.Warn().Str("error", err.Error()).Msg("telegram offset not persisted")
				}
			}
		}
		if err == nil {
			c.setStatus("polling")
			b.reset()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		c.retrying(err)
		b.waitAtLeast(ctx, retryAfter(err))
	}
}

// handleBatch handles updates concurrently across chats and in order
// within each chat. An error means some update was not claimed; the batch
// is offered again and the ones already handled are skipped.
func (c *Channel) handleBatch(ctx context.Context, ups []*models.Update, me identity) error {
	byChat := map[int64][]*models.Update{}
	var order []int64
	for _, u := range ups {
		chat, ok := chatOf(u)
		if !ok {
			continue
		}
		if _, seen := byChat[chat]; !seen {
			order = append(order, chat)
		}
		byChat[chat] = append(byChat[chat], u)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(order))
	for i, chat := range order {
		wg.Go(func() {
			for _, u := range byChat[chat] {
				if err := c.process(ctx, u, me); err != nil {
					errs[i] = err
					return // keep the chat's order: later updates wait for the retry
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// savedOffset is the persisted high-water mark: the next update_id to ask
// for, and when it was written.
type savedOffset struct {
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"`
}

func (c *Channel) offsetKey() string {
	return "telegram/offset/" + strconv.FormatInt(c.bot.ID(), 10)
}

// loadOffset returns the persisted offset, or 0 (every unconfirmed
// update) when there is none or it is older than Telegram keeps updates:
// ids restart at a random value after a long idle time, and an offset
// from before could confirm new updates unseen.
func (c *Channel) loadOffset(ctx context.Context) (int64, error) {
	raw, err := c.o.Store.Channels().Get(ctx, c.offsetKey())
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: offset: %w", errStore, err)
	}
	var s savedOffset
	if err := json.Unmarshal(raw, &s); err != nil {
		c.log.Warn().Msg("telegram offset unreadable; starting from the unconfirmed updates")
		return 0, nil
	}
	if time.Since(s.At) > updateRetention {
		return 0, nil
	}
	return s.Offset, nil
}

func (c *Channel) saveOffset(ctx context.Context, offset int64) error {
	raw, err := json.Marshal(savedOffset{Offset: offset, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := c.o.Store.Channels().Put(ctx, c.offsetKey(), raw, 0); err != nil {
		return fmt.Errorf("%w: offset: %w", errStore, err)
	}
	return nil
}

// getUpdatesRequest is the getUpdates call. The call is made here rather
// than through the client's own loop, which confirms updates before they
// are handled.
type getUpdatesRequest struct {
	Offset         int64    `json:"offset,omitempty"`
	Timeout        int      `json:"timeout"`
	AllowedUpdates []string `json:"allowed_updates"`
}

// envelope is the Bot API answer.
type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// getUpdates long-polls once. Errors are those of the client library
// where it has them (bot.ErrorConflict, *bot.TooManyRequestsError, ...).
func (c *Channel) getUpdates(ctx context.Context, offset int64) ([]*models.Update, error) {
	body, err := json.Marshal(getUpdatesRequest{
		Offset:         offset,
		Timeout:        int(c.o.PollTimeout / time.Second),
		AllowedUpdates: allowedUpdates,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.PollTimeout+callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.APIURL+"/bot"+c.o.Token+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, c.wrap("getUpdates", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		return nil, c.wrap("getUpdates", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxUpdatesBody))
	if err != nil {
		return nil, c.wrap("getUpdates", err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		if resp.StatusCode >= 500 {
			return nil, fmt.Errorf("telegram: getUpdates: http %d: %w", resp.StatusCode, errServer)
		}
		return nil, fmt.Errorf("telegram: getUpdates: http %d: %w", resp.StatusCode, errBadResponse)
	}
	if !env.OK {
		return nil, apiErr(env)
	}
	var ups []*models.Update
	if err := json.Unmarshal(env.Result, &ups); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w: %w", errBadResponse, err)
	}
	return ups, nil
}

// apiErr maps an error envelope to the client library's errors.
func apiErr(env envelope) error {
	desc := env.Description
	switch code := env.ErrorCode; {
	case code == http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: "telegram: getUpdates: " + desc, RetryAfter: env.Parameters.RetryAfter}
	case code == http.StatusUnauthorized:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorUnauthorized, desc)
	case code == http.StatusNotFound:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorNotFound, desc)
	case code == http.StatusConflict:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorConflict, desc)
	case code == http.StatusForbidden:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorForbidden, desc)
	case code == http.StatusBadRequest:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorBadRequest, desc)
	case code >= 500:
		return fmt.Errorf("telegram: getUpdates: %d %s: %w", code, desc, errServer)
	}
	return fmt.Errorf("telegram: getUpdates: %d %s: %w", env.ErrorCode, desc, errBadResponse)
}
