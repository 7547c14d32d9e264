package conversation

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
)

// Reply language. Each message is answered in its own language: Chinese
// text gets Chinese; otherwise the platform's hint about the person
// (Telegram's language_code) decides, else English words get English, else
// (a bare command such as /tasks) the configured default. A button press
// without a hint answers in the chat's last-used language. /lang en|zh pins a chat's language over
// all of this; /lang auto lifts the pin. The language of the last answer
// (or the pin) is remembered in the chat's prefs, and notices follow it.

// pinKey is where a chat's pinned language is kept (store.Channels()).
func pinKey(chat string) string { return "langpin/" + chat }

// pinned returns the chat's pinned language, "" when none.
func (c *Core) pinned(ctx context.Context, chat string) string {
	b, err := c.o.Store.Channels().Get(ctx, pinKey(chat))
	if err != nil {
		return ""
	}
	return normLang(string(b))
}

// langOf picks the reply language of m and remembers it for notices.
func (c *Core) langOf(ctx context.Context, m Message) string {
	lang := c.pinned(ctx, m.Chat)
	words := ""
	if m.Button == nil {
		words = textLang(m.Text)
	}
	if lang == "" && words == "zh" {
		lang = "zh"
	}
	if lang == "" {
		lang = normLang(m.Lang)
	}
	if lang == "" && m.Button == nil {
		lang = words
	}
	if lang == "" && m.Button != nil {
		if p, err := c.o.Prefs.Get(ctx, m.Chat); err == nil {
			lang = normLang(p.Lang)
		}
	}
	if lang == "" {
		lang = c.lang()
	}
	c.rememberLang(ctx, m.Chat, lang)
	return lang
}

// rememberLang records lang as the chat's last-used language.
func (c *Core) rememberLang(ctx context.Context, chat, lang string) {
	p, err := c.o.Prefs.Get(ctx, chat)
	if err == nil && p.Lang != lang {
		_ = c.o.Prefs.Update(ctx, chat, func(p *delivery.Prefs) { p.Lang = lang })
	}
}

// textLang reads the language of a message from its words: "zh" when it
// has Chinese characters, "en" when it has an English word, "" when
// neither (URLs, ids, durations and an ASCII command word say nothing).
func textLang(s string) string {
	en := false
	for i, f := range strings.Fields(s) {
		if strings.Contains(f, "://") || strings.HasPrefix(f, "@") {
			continue
		}
		for _, r := range f {
			if unicode.Is(unicode.Han, r) {
				return "zh"
			}
		}
		if i == 0 && (strings.HasPrefix(f, "/") || strings.HasPrefix(f, "／")) {
			continue
		}
		if englishWord(f) {
			en = true
		}
	}
	if en {
		return "en"
	}
	return ""
}

// englishWord: two or more ASCII letters, perhaps with trailing punctuation.
func englishWord(f string) bool {
	f = strings.TrimRight(f, ".,!?;:")
	if len(f) < 2 {
		return false
	}
	for _, r := range f {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '\'') {
			return false
		}
	}
	return true
}

// setLang answers /lang en|zh|auto (/lang alone says what is in force).
func (t *turn) setLang(arg string) []Reply {
	kv := t.c.o.Store.Channels()
	switch a := strings.ToLower(arg); {
	case a == "":
		if p := t.c.pinned(t.ctx, t.m.Chat); p != "" {
			return t.reply("This chat is pinned to English. /lang auto answers each message in its own language.",
				"本聊天固定使用中文。发送 /lang auto 改为按每条消息的语言回复。")
		}
		return t.reply("I answer each message in its own language. /lang en or /lang zh pins one.",
			"我会按每条消息的语言回复。发送 /lang en 或 /lang zh 固定一种语言。")
	case a == "auto":
		if err := kv.Delete(t.ctx, pinKey(t.m.Chat)); err != nil && !errors.Is(err, store.ErrNotFound) {
			return t.failed(err)
		}
		t.lang = textLang(t.m.Text)
		if t.lang == "" {
			t.lang = t.c.lang()
		}
		return t.reply("From now on I answer each message in its own language.", "之后我会按每条消息的语言回复。")
	case normLang(a) != "" && (len(a) == 2 || strings.HasPrefix(a, "zh-") || strings.HasPrefix(a, "en-")):
		lang := normLang(a)
		if err := kv.Put(t.ctx, pinKey(t.m.Chat), []byte(lang), 0); err != nil {
			return t.failed(err)
		}
		t.lang = lang
		t.c.rememberLang(t.ctx, t.m.Chat, lang)
		return t.reply("This chat now gets English, replies and notices alike. /lang auto lifts the pin.",
			"本聊天之后的回复和通知都使用中文。发送 /lang auto 取消固定。")
	case a == "中文" || a == "汉语" || a == "chinese":
		return t.setLang("zh")
	case a == "英文" || a == "英语" || a == "english":
		return t.setLang("en")
	}
	return t.reply("Use /lang en, /lang zh or /lang auto.", "请发送 /lang en、/lang zh 或 /lang auto。")
}

// scheduleProblem is a schedule error's message in each language, each
// in one language only.
func scheduleProblem(err error) (en, zh string) {
	var pe *schedule.ParseError
	if errors.As(err, &pe) {
		return pe.Msg, pe.Chinese()
	}
	return "that local time does not exist in its zone", "该时区里不存在这个当地时间"
}
