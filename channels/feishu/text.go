package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery/address"
)

// toMessage maps a received message to a turn. It reports false for what
// is not a turn: non-text messages and group messages that do not mention
// the bot.
func (c *Channel) toMessage(ctx context.Context, in *inbound) (conversation.Message, bool) {
	if in.msgType == "file" {
		return c.fileMessage(in)
	}
	if in.msgType != "text" {
		c.log.Debug().Str("msg_type", in.msgType).Msg("feishu message ignored: not text")
		return conversation.Message{}, false
	}
	var content struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(in.content), &content); err != nil {
		c.log.Debug().Msg("feishu message ignored: undecodable content")
		return conversation.Message{}, false
	}
	group := in.chatType != "p2p"
	botID := ""
	if group && len(in.mentions) > 0 {
		var err error
		if botID, err = c.botOpenID(ctx); err != nil {
			c.log.Warn().Str("error", c.scrub(err.Error())).Msg("feishu bot identity unknown; group message dropped")
			return conversation.Message{}, false
		}
	}
	text, mentioned := resolveMentions(content.Text, in.mentions, botID)
	if group && !mentioned {
		return conversation.Message{}, false
	}
	return conversation.Message{
		Channel:   "feishu",
		ID:        in.messageID,
		Principal: address.FeishuUser(in.openID),
		Chat:      address.FeishuChat(in.chatID),
		Group:     group,
		Addressed: !group || mentioned,
		Text:      text,
		Lang:      detectLang(text, c.o.DefaultLang),
	}, true
}

// resolveMentions replaces the mention keys (@_user_1) in text: the bot's
// own mention (open id botID) is removed, every other becomes "@Name". It
// reports whether the bot was mentioned.
func resolveMentions(text string, mentions []mentionLike, botID string) (string, bool) {
	mentioned := false
	// Longest keys first, so @_user_1 never eats into @_user_10.
	var ms []mentionLike
	for _, m := range mentions {
		if m != nil {
			ms = append(ms, m)
		}
	}
	sortByKeyLen(ms)
	for _, m := range ms {
		key := str(m.Key)
		if key == "" {
			continue
		}
		openID := ""
		if m.Id != nil {
			openID = str(m.Id.OpenId)
		}
		if botID != "" && openID == botID {
			mentioned = mentioned || strings.Contains(text, key)
			text = strings.ReplaceAll(text, key, "")
			continue
		}
		text = strings.ReplaceAll(text, key, "@"+str(m.Name))
	}
	return strings.Join(strings.Fields(text), " "), mentioned
}

func sortByKeyLen(ms []mentionLike) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && len(str(ms[j].Key)) > len(str(ms[j-1].Key)); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// detectLang is "zh" for text with Han characters outside URLs, "en" for clearly
// English prose (two plain words or more besides commands, URLs and
// mentions), else def.
func detectLang(text, def string) string {
	words := 0
	for _, f := range strings.Fields(text) {
		if strings.Contains(f, "://") {
			continue
		}
		for _, r := range f {
			if unicode.Is(unicode.Han, r) {
				return "zh"
			}
		}
		if strings.HasPrefix(f, "/") || strings.HasPrefix(f, "@") {
			continue
		}
		f = strings.Trim(f, ".,!?;:'\"()")
		if len(f) >= 2 && strings.IndexFunc(f, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsLetter(r) }) < 0 {
			words++
		}
	}
	if words >= 2 {
		return "en"
	}
	return def
}
