package feishu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/textcut"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	sink "github.com/herald-bridge/herald/delivery/feishu"
)

// Send errors. Errors never quote the chat id, the token or the secret.
var (
	// ErrBadChat: the chat address is not feishu:chat:<id> or feishu:user:<open_id>.
	ErrBadChat = errors.New("feishu: not a feishu chat address")
	// ErrUnreachable: the bot is not in the chat or the user is out of the
	// app's scope.
	ErrUnreachable = errors.New("feishu: chat unreachable")
	// ErrRateLimited: the platform throttled the call.
	ErrRateLimited = errors.New("feishu: rate limited")
	// ErrSend: the platform refused the message for another reason.
	ErrSend = errors.New("feishu: message refused")
	// ErrTokenRejected: the platform refused the app's credentials.
	ErrTokenRejected = sink.ErrTokenRejected
	// ErrTokenUnavailable: the token endpoint failed or answered garbage.
	ErrTokenUnavailable = sink.ErrTokenUnavailable
)

// maxText bounds the text of one message (the platform takes 150 KB for
// text and 30 KB for cards).
const maxText = 8000

// Platform codes acted on.
const (
	codeRateLimited     = 99991400
	codeBotNotInChat    = 230002
	codeOutOfScope      = 230013
	codeChatRateLimited = 230020
)

// Say sends r to chat (feishu:chat:<chat_id> or feishu:user:<open_id>): an
// interactive card when r has buttons, plain text otherwise. A token the
// platform declares invalid is replaced and the call made once more
// (nothing was sent); both calls carry the same uuid.
func (c *Channel) Say(ctx context.Context, chat string, r conversation.Reply) error {
	addr, err := delivery.ParseAddress(chat)
	if err != nil || addr.Kind != delivery.FeishuChat || addr.ID == "" {
		return ErrBadChat
	}
	idType := larkim.ReceiveIdTypeChatId
	if addr.IDType == address.OpenID {
		idType = larkim.ReceiveIdTypeOpenId
	}
	if r.Text == "" && len(r.Buttons) == 0 {
		return nil
	}
	msgType, content := larkim.MsgTypeText, textContent(r.Text)
	if len(r.Buttons) > 0 {
		msgType, content = larkim.MsgTypeInteractive, string(buildCard(r))
	}
	uuid := newUUID()
	for attempt := 0; ; attempt++ {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return err
		}
		req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(idType).Body(
			larkim.NewCreateMessageReqBodyBuilder().ReceiveId(addr.ID).MsgType(msgType).Content(content).Uuid(uuid).Build(),
		).Build()
		resp, err := c.lark.Im.V1.Message.Create(ctx, req, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return fmt.Errorf("feishu: send message: %s", c.scrub(strings.ReplaceAll(err.Error(), addr.ID, "…")))
		}
		if resp.Success() {
			return nil
		}
		if sink.IsTokenInvalid(resp.Code) {
			c.tokens.Drop(tok)
			if attempt == 0 {
				continue
			}
		}
		switch resp.Code {
		case codeBotNotInChat, codeOutOfScope:
			return fmt.Errorf("%w: code %d", ErrUnreachable, resp.Code)
		case codeRateLimited, codeChatRateLimited:
			return fmt.Errorf("%w: code %d", ErrRateLimited, resp.Code)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("%w: http 429", ErrRateLimited)
		}
		return fmt.Errorf("%w: code %d (log id %s)", ErrSend, resp.Code, resp.RequestId())
	}
}

// retract recalls the message m (it carried a secret). The platform lets
// a bot recall another's message only where it administers the group;
// when it refuses, r.Unretracted asks the person to recall it.
func (c *Channel) retract(ctx context.Context, m conversation.Message, r conversation.Reply) {
	if m.ID == "" {
		return
	}
	err := c.recall(ctx, m.ID)
	if err == nil {
		return
	}
	c.log.Warn().Str("error", c.scrub(err.Error())).Msg("feishu: a message carrying a secret was not recalled")
	if r.Unretracted != "" {
		if err := c.Say(ctx, m.Chat, conversation.Reply{Text: r.Unretracted}); err != nil {
			c.log.Warn().Str("error", c.scrub(err.Error())).Msg("feishu reply failed")
		}
	}
}

// recall calls DELETE /open-apis/im/v1/messages/:message_id, once more
// with a fresh token when the platform declares the token invalid.
func (c *Channel) recall(ctx context.Context, messageID string) error {
	for attempt := 0; ; attempt++ {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return err
		}
		req := larkim.NewDeleteMessageReqBuilder().MessageId(messageID).Build()
		resp, err := c.lark.Im.V1.Message.Delete(ctx, req, larkcore.WithTenantAccessToken(tok))
		if err != nil {
			return fmt.Errorf("feishu: recall message: %s", c.scrub(strings.ReplaceAll(err.Error(), messageID, "…")))
		}
		if resp.Success() {
			return nil
		}
		if sink.IsTokenInvalid(resp.Code) && attempt == 0 {
			c.tokens.Drop(tok)
			continue
		}
		return fmt.Errorf("%w: recall: code %d", ErrSend, resp.Code)
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return textcut.Bytes(s, maxText) + "…"
}

func textContent(text string) string {
	b, _ := json.Marshal(map[string]string{"text": clip(text)})
	return string(b)
}

// cardJSON is the interactive card herald sends for a reply with buttons
// and returns as the edited card of a press.
type cardJSON struct {
	Config   map[string]bool `json:"config"`
	Elements []any           `json:"elements"`
}

type cardText struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

type cardButton struct {
	Tag   string            `json:"tag"`
	Text  cardText          `json:"text"`
	Type  string            `json:"type"`
	Value map[string]string `json:"value"`
}

// buildCard renders r as a card: its text and one row of its buttons,
// each carrying {"action","arg"} back in the press.
func buildCard(r conversation.Reply) []byte {
	c := cardJSON{Config: map[string]bool{"wide_screen_mode": true}}
	if r.Text != "" {
		c.Elements = append(c.Elements, map[string]any{"tag": "div", "text": cardText{Tag: "plain_text", Content: clip(r.Text)}})
	}
	if len(r.Buttons) > 0 {
		var actions []cardButton
		for _, b := range r.Buttons {
			kind := "default"
			switch b.Action {
			case "approve":
				kind = "primary"
			case "reject":
				kind = "danger"
			}
			actions = append(actions, cardButton{
				Tag: "button", Text: cardText{Tag: "plain_text", Content: b.Label}, Type: kind,
				Value: map[string]string{"action": b.Action, "arg": b.Arg},
			})
		}
		c.Elements = append(c.Elements, map[string]any{"tag": "action", "actions": actions})
	}
	if c.Elements == nil {
		c.Elements = []any{}
	}
	out, _ := json.Marshal(c)
	return out
}

// getJSON GETs url with the bearer token and decodes the answer into out.
// Transport errors are returned without the URL.
func getJSON(ctx context.Context, client *http.Client, url, bearer string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, errors.New("bad request url")
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, errors.New("request failed")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return resp.StatusCode, errors.New("read failed")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, fmt.Errorf("http %d, undecodable answer", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// ---------------------------------------------------------------- bot

// botInfoPath answers the app bot's own identity.
const botInfoPath = "/open-apis/bot/v3/info"

// botInfo caches the bot's open id (needed to tell mentions of the bot
// from mentions of people). A failed lookup is retried on next need.
type botInfo struct {
	mu     sync.Mutex
	openID string
}

func (c *Channel) botOpenID(ctx context.Context) (string, error) {
	c.bot.mu.Lock()
	defer c.bot.mu.Unlock()
	if c.bot.openID != "" {
		return c.bot.openID, nil
	}
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return "", err
	}
	var a struct {
		Code int `json:"code"`
		Bot  struct {
			OpenID string `json:"open_id"`
		} `json:"bot"`
	}
	status, err := getJSON(ctx, c.o.HTTPClient, c.o.BaseURL+botInfoPath, tok, &a)
	switch {
	case err != nil:
		return "", fmt.Errorf("feishu: bot info: %w", err)
	case a.Code != 0 || a.Bot.OpenID == "":
		if sink.IsTokenInvalid(a.Code) {
			c.tokens.Drop(tok)
		}
		return "", fmt.Errorf("feishu: bot info: http %d code %d", status, a.Code)
	}
	c.bot.openID = a.Bot.OpenID
	return c.bot.openID, nil
}
