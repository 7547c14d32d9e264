package feishu

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/address"
)

// Event types handled.
const (
	eventMessage    = "im.message.receive_v1"
	eventCardAction = "card.action.trigger"
)

// Request errors of the event endpoint.
var (
	errBadRequest = errors.New("feishu: malformed event")
	errTooLarge   = errors.New("feishu: event body too large")
	errStore      = errors.New("feishu: dedup store unavailable")
)

// envelope is what the handler reads of a plaintext event before routing.
type envelope struct {
	Schema    string                 `json:"schema"`
	Type      string                 `json:"type"`
	Token     string                 `json:"token"`
	Challenge string                 `json:"challenge"`
	Encrypt   string                 `json:"encrypt"`
	Header    *larkevent.EventHeader `json:"header"`
}

// EventHandler serves POST /feishu/events (webhook mode): the URL
// verification challenge, signature and freshness check and decryption
// when an encrypt key is set, the verification token check on every
// event, durable dedup, and the card press answer. Messages are answered
// 200 at once and handled afterwards.
func (c *Channel) EventHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := c.serveEvent(w, r); err != nil {
			c.handleError(w, err)
		}
	})
}

func (c *Channel) handleError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadSignature), errors.Is(err, ErrStale), errors.Is(err, ErrBadToken):
		status = http.StatusUnauthorized
	case errors.Is(err, ErrUndecryptable), errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, errTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrClosed), errors.Is(err, errStore):
		status = http.StatusServiceUnavailable
	}
	ev := c.log.Debug()
	if status >= 500 {
		ev = c.log.Warn()
	}
	ev.Int("status", status).Str("error", c.scrub(err.Error())).Msg("feishu event refused")
	writeJSON(w, status, map[string]string{"msg": http.StatusText(status)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"msg":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

func (c *Channel) serveEvent(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("%w: method %s", errBadRequest, r.Method)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxEventBody+1))
	if err != nil {
		return fmt.Errorf("%w: read: %w", errBadRequest, err)
	}
	if len(body) > MaxEventBody {
		return errTooLarge
	}
	plain, signed, err := c.open(r.Header, body)
	if err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	if env.Encrypt != "" {
		// Encrypted, but no key configured to open it.
		return fmt.Errorf("%w: encrypted event without an encrypt key", ErrUndecryptable)
	}
	token := env.Token
	if env.Header != nil {
		token = env.Header.Token
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(c.o.VerificationToken)) != 1 {
		return ErrBadToken
	}
	if env.Type == string(larkevent.ReqTypeChallenge) {
		writeJSON(w, http.StatusOK, map[string]string{"challenge": env.Challenge})
		return nil
	}
	if !signed {
		// Only the challenge may come without a signature when a key is set.
		return ErrBadSignature
	}
	if env.Header == nil || env.Header.EventID == "" {
		return fmt.Errorf("%w: no event header", errBadRequest)
	}
	switch env.Header.EventType {
	case eventMessage:
		var e larkim.P2MessageReceiveV1
		if err := json.Unmarshal(plain, &e); err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
		if err := c.onMessage(r.Context(), &e); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"msg": "success"})
	case eventCardAction:
		var e callback.CardActionTriggerEvent
		if err := json.Unmarshal(plain, &e); err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
		resp, err := c.onCard(r.Context(), &e)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, resp)
	default:
		writeJSON(w, http.StatusOK, map[string]string{"msg": "ignored"})
	}
	return nil
}

// open returns the plaintext event. With an encrypt key the body must be
// {"encrypt": …}; signed reports whether a valid, fresh signature came
// with it (always true without a key, where the token is the only check).
func (c *Channel) open(h http.Header, body []byte) (plain []byte, signed bool, err error) {
	if c.o.EncryptKey == "" {
		return body, true, nil
	}
	var enc larkevent.EventEncryptMsg
	if err := json.Unmarshal(body, &enc); err != nil || enc.Encrypt == "" {
		return nil, false, fmt.Errorf("%w: body is not an encrypted event", ErrUndecryptable)
	}
	sig := h.Get(larkevent.EventSignature)
	if sig != "" {
		if err := verifySignature(h.Get(larkevent.EventRequestTimestamp), h.Get(larkevent.EventRequestNonce), sig, c.o.EncryptKey, body, c.o.Now()); err != nil {
			return nil, false, err
		}
	}
	plain, err = Decrypt(enc.Encrypt, c.o.EncryptKey)
	if err != nil {
		return nil, false, err
	}
	return plain, sig != "", nil
}

// mark records id in ns and reports whether it is new.
func (c *Channel) mark(ctx context.Context, ns, id string) (bool, error) {
	first, err := c.o.Store.Dedup().Mark(ctx, ns, id, DedupTTL)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errStore, err)
	}
	return first, nil
}

// admit runs fn (dedup marks, then enqueue) unless the channel is closed,
// holding the gate so shutdown waits for it.
func (c *Channel) admit(fn func() error) error {
	c.gate.RLock()
	defer c.gate.RUnlock()
	if c.closed {
		return ErrClosed
	}
	return fn()
}

// inbound is a received message, kept raw until its turn.
type inbound struct {
	messageID, chatID, chatType, msgType, content, openID string
	mentions                                              []mentionLike
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func eventID(b *larkevent.EventV2Base) string {
	if b == nil || b.Header == nil {
		return ""
	}
	return b.Header.EventID
}

// onMessage dedups and queues an im.message.receive_v1 event (both modes).
func (c *Channel) onMessage(ctx context.Context, e *larkim.P2MessageReceiveV1) error {
	id := eventID(e.EventV2Base)
	if id == "" || e.Event == nil || e.Event.Message == nil || e.Event.Sender == nil {
		return fmt.Errorf("%w: incomplete message event", errBadRequest)
	}
	m, s := e.Event.Message, e.Event.Sender
	in := &inbound{
		messageID: str(m.MessageId), chatID: str(m.ChatId), chatType: str(m.ChatType),
		msgType: str(m.MessageType), content: str(m.Content), mentions: m.Mentions,
	}
	if s.SenderId != nil {
		in.openID = str(s.SenderId.OpenId)
	}
	if str(s.SenderType) != "user" || in.openID == "" || in.chatID == "" || in.messageID == "" {
		// Bots and apps (including herald) are not conversation partners.
		return nil
	}
	return c.admit(func() error {
		if first, err := c.mark(ctx, nsEvent, id); err != nil || !first {
			return err
		}
		// The event id is marked now, so a failure here must not refuse
		// the event (its re-push would be dropped as seen): the core
		// deduplicates message ids again.
		if first, err := c.mark(ctx, nsMessage, in.messageID); err != nil {
			c.log.Warn().Str("error", c.scrub(err.Error())).Msg("feishu message dedup unavailable")
		} else if !first {
			return nil
		}
		if !c.chats.add(in.chatID, job{ev: in}) {
			c.log.Warn().Msg("feishu chat queue full; message dropped")
		}
		return nil
	})
}

// actionRe bounds what a card button's value may name.
var actionRe = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// onCard dedups a card.action.trigger press, runs its turn in the chat's
// queue and answers with the toast and the edited card when the turn
// ends within the wait (both modes).
func (c *Channel) onCard(ctx context.Context, e *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
	id := eventID(e.EventV2Base)
	ev := e.Event
	if id == "" || ev == nil || ev.Operator == nil || ev.Action == nil {
		return nil, fmt.Errorf("%w: incomplete card action", errBadRequest)
	}
	action, _ := ev.Action.Value["action"].(string)
	arg, _ := ev.Action.Value["arg"].(string)
	var chatID, ref string
	if ev.Context != nil {
		chatID, ref = ev.Context.OpenChatID, ev.Context.OpenMessageID
	}
	valid := actionRe.MatchString(action) && len(arg) <= 64 && ev.Operator.OpenID != "" && chatID != ""
	msg := conversation.Message{
		Channel:   "feishu",
		ID:        id,
		Principal: address.FeishuUser(ev.Operator.OpenID),
		Chat:      address.FeishuChat(chatID),
		Addressed: true,
		// No Lang: a card action says nothing about its presser; the
		// core answers in the presser's pinned or last-used language.
		Button: &conversation.Press{Action: action, Arg: arg, Ref: ref},
	}
	wait := newPressWait()
	queued := false
	err := c.admit(func() error {
		first, err := c.mark(ctx, nsEvent, id)
		if err != nil || !first || !valid {
			return err
		}
		queued = c.chats.add(chatID, job{msg: msg, press: wait})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !queued {
		return &callback.CardActionTriggerResponse{}, nil
	}
	t := time.NewTimer(c.cardWait)
	defer t.Stop()
	select {
	case <-wait.done:
	case <-t.C:
		if !wait.abandon() {
			return &callback.CardActionTriggerResponse{}, nil
		}
	}
	resp := &callback.CardActionTriggerResponse{}
	if wait.toast != "" {
		resp.Toast = &callback.Toast{Type: "info", Content: wait.toast}
	}
	if wait.card != nil {
		resp.Card = &callback.Card{Type: "raw", Data: json.RawMessage(buildCard(*wait.card))}
	}
	return resp, nil
}

// turn runs one queued job: maps a received message, asks the handler,
// hands a press's toast and edit to its waiter and says the rest.
func (c *Channel) turn(ctx context.Context, j job) {
	msg := j.msg
	if j.ev != nil {
		var ok bool
		if msg, ok = c.toMessage(ctx, j.ev); !ok {
			return
		}
	}
	replies := c.o.Handler.Handle(ctx, msg)
	if ctx.Err() != nil {
		if j.press != nil {
			j.press.offer("", nil)
		}
		return
	}
	rest := replies
	if j.press != nil {
		toast, card, others := splitPress(replies)
		if j.press.offer(toast, card) {
			rest = others
		} else if card != nil {
			// Too late to edit the card: say the decision instead.
			rest = replies
		}
	}
	for _, r := range rest {
		if r.Retract {
			c.retract(ctx, msg, r)
		}
		if r.Text == "" {
			continue
		}
		r.Edit, r.Toast = false, ""
		if err := c.Say(ctx, msg.Chat, r); err != nil {
			c.log.Warn().Str("error", c.scrub(err.Error())).Msg("feishu reply failed")
		}
	}
}

// splitPress takes the first toast and the first Edit reply out of a
// press's replies; the others are said as messages.
func splitPress(replies []conversation.Reply) (toast string, card *conversation.Reply, others []conversation.Reply) {
	for i := range replies {
		r := replies[i]
		if toast == "" && r.Toast != "" {
			toast = r.Toast
		}
		if card == nil && r.Edit && r.Text != "" {
			card = &r
			continue
		}
		others = append(others, r)
	}
	return toast, card, others
}

// mentionLike is the SDK's mention of a user in a received message.
type mentionLike = *larkim.MentionEvent
