package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/address"
	sink "github.com/herald-bridge/herald/delivery/feishu"
)

// resourcePath is the message resource endpoint: the file a message carries.
const resourcePath = "/open-apis/im/v1/messages/%s/resources/%s?type=file"

// fileMessage maps a file message of a private chat to a conversation
// message whose File downloads it; a file in a group is not for us.
func (c *Channel) fileMessage(in *inbound) (conversation.Message, bool) {
	var content struct {
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
	}
	if in.chatType != "p2p" || json.Unmarshal([]byte(in.content), &content) != nil || content.FileKey == "" {
		return conversation.Message{}, false
	}
	messageID, key := in.messageID, content.FileKey
	return conversation.Message{
		Channel:   "feishu",
		ID:        in.messageID,
		Principal: address.FeishuUser(in.openID),
		Chat:      address.FeishuChat(in.chatID),
		Addressed: true,
		Lang:      c.o.DefaultLang,
		File: &conversation.File{Name: content.FileName, Fetch: func(ctx context.Context, max int64) ([]byte, error) {
			return c.download(ctx, messageID, key, max)
		}},
	}, true
}

// download fetches a message's file with the tenant token, at most max
// bytes. A token the platform declares invalid is replaced once.
func (c *Channel) download(ctx context.Context, messageID, key string, max int64) ([]byte, error) {
	u := c.o.BaseURL + fmt.Sprintf(resourcePath, url.PathEscape(messageID), url.PathEscape(key))
	for attempt := 0; ; attempt++ {
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.o.HTTPClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("feishu: download a file: %s", c.scrub(err.Error()))
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("feishu: download a file: %s", c.scrub(err.Error()))
		}
		if resp.StatusCode == http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			if int64(len(data)) > max {
				return nil, fmt.Errorf("feishu: the file is larger than %d bytes", max)
			}
			return data, nil
		}
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(data, &e)
		if sink.IsTokenInvalid(e.Code) && attempt == 0 {
			c.tokens.Drop(tok)
			continue
		}
		return nil, fmt.Errorf("feishu: download a file: HTTP %d, code %d", resp.StatusCode, e.Code)
	}
}
