package conversation

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
)

// Reply language. Each message is answered in its own language: Chinese
// text gets Chinese; otherwise the platform's hint about the person
// (Telegram's language_code) decides, else English words get English, else
// (a bare command such as /tasks) the language last used in the chat, else
// the configured default. What a command quotes or names (a task name,
// a selector) is the person's data, not their language: only the words
// around it count. /lang en|zh pins
// a chat's language over all of this; /lang auto lifts the pin. The
// language of the last answer (or the pin) is remembered in the chat's
// prefs, and notices follow it.
//
// A button press says nothing about its presser's language (a Feishu card
// action carries no hint at all), so it is answered in the presser's:
// the chat's pin, else the presser's own pin, else the platform's hint,
// else the language last used in the presser's private chat, else in the
// chat. A person's own pin and language live under their private chat's
// address (ChatOf), which on Feishu differs from the p2p chat they type
// in: a private turn there is remembered under both.

// pinKey is where a chat's pinned language is kept (store.Channels()).
func pinKey(chat string) string { return "langpin/" + chat }

// pinned returns the chat's pinned language, "" when none.
func (c *Core) pinned(ctx context.Context, chat string) string {
	if chat == "" {
		return ""
	}
	b, err := c.o.Store.Channels().Get(ctx, pinKey(chat))
	if err != nil {
		return ""
	}
	return normLang(string(b))
}

// remembered returns the chat's last-used language, "" when none.
func (c *Core) remembered(ctx context.Context, chat string) string {
	if chat == "" {
		return ""
	}
	p, err := c.o.Prefs.Get(ctx, chat)
	if err != nil {
		return ""
	}
	return normLang(p.Lang)
}

// own is the address of the person's private chat when it is not m.Chat
// (a group, or a Feishu p2p chat), "" otherwise.
func own(m Message) string {
	if a := ChatOf(m.Principal); a != m.Chat {
		return a
	}
	return ""
}

// alsoOwn is the person's private-chat address a turn in their private
// chat is remembered under as well ("" when none or not private).
func alsoOwn(m Message) string {
	if m.Group || m.Button != nil {
		return ""
	}
	return own(m)
}

// langOf picks the reply language of m and remembers it for notices.
func (c *Core) langOf(ctx context.Context, m Message) string {
	var lang string
	if m.Button != nil {
		lang = c.pressLang(ctx, m)
	} else {
		lang = c.pinned(ctx, m.Chat)
		words := textLang(spokenText(m.Text))
		if lang == "" && words == "zh" {
			lang = "zh"
		}
		if lang == "" {
			lang = normLang(m.Lang)
		}
		if lang == "" {
			lang = words
		}
		if lang == "" {
			lang = c.remembered(ctx, m.Chat)
		}
	}
	if lang == "" {
		lang = c.lang()
	}
	c.rememberLang(ctx, m.Chat, lang)
	c.rememberLang(ctx, alsoOwn(m), lang)
	return lang
}

// pressLang is the language a button press is answered in ("" when
// nothing is known): see Reply language above.
func (c *Core) pressLang(ctx context.Context, m Message) string {
	for _, l := range []string{c.pinned(ctx, m.Chat), c.pinned(ctx, own(m)), normLang(m.Lang),
		c.remembered(ctx, own(m)), c.remembered(ctx, m.Chat)} {
		if l != "" {
			return l
		}
	}
	return ""
}

// rememberLang records lang as the chat's last-used language.
func (c *Core) rememberLang(ctx context.Context, chat, lang string) {
	if chat == "" {
		return
	}
	p, err := c.o.Prefs.Get(ctx, chat)
	if err == nil && p.Lang != lang {
		_ = c.o.Prefs.Update(ctx, chat, func(p *chatprefs.Prefs) { p.Lang = lang })
	}
}

// spokenText is the part of m's text that speaks for its language: a
// command without its quoted arguments and without the value of its name
// clause (/watch … name 维护公告 is an English request); other text whole.
func spokenText(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "／") {
		return s
	}
	toks, err := tokenize(t)
	if err != nil {
		return s
	}
	kept := make([]string, 0, len(toks))
	inName := false
	for _, tk := range toks {
		if kw := keyword(tk); kw != "" {
			inName = kw == kwName
			kept = append(kept, tk.text)
			continue
		}
		if tk.quoted || inName {
			continue
		}
		kept = append(kept, tk.text)
	}
	return strings.Join(kept, " ")
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
			return t.reply("lang.this_chat_is_pinned")
		}
		return t.reply("lang.i_answer_each_message")
	case a == "auto":
		for _, chat := range t.pinChats() {
			if err := kv.Delete(t.ctx, pinKey(chat)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return t.failed(err)
			}
		}
		t.lang = textLang(t.m.Text)
		if t.lang == "" {
			t.lang = t.c.lang()
		}
		return t.reply("lang.from_now_on_i")
	case normLang(a) != "" && (len(a) == 2 || strings.HasPrefix(a, "zh-") || strings.HasPrefix(a, "en-")):
		lang := normLang(a)
		for _, chat := range t.pinChats() {
			if err := kv.Put(t.ctx, pinKey(chat), []byte(lang), 0); err != nil {
				return t.failed(err)
			}
			t.c.rememberLang(t.ctx, chat, lang)
		}
		t.lang = lang
		return t.reply("lang.this_chat_now_gets")
	case languageNamed(a) != "":
		return t.setLang(languageNamed(a))
	}
	return t.reply("lang.use_lang_en_lang")
}

// pinChats are where /lang keeps its pin: the chat, and the person's own
// address when the chat is their private one under another name.
func (t *turn) pinChats() []string {
	if o := alsoOwn(t.m); o != "" {
		return []string{t.m.Chat, o}
	}
	return []string{t.m.Chat}
}

// scheduleProblem is a schedule error's message in each language, each
// in one language only: the parser's coded error as the catalogue words
// it, or a local time that does not exist.
func scheduleProblem(err error) text.Localized {
	return func(lang string) string {
		if msg, ok := text.Error(lang, err); ok {
			return msg
		}
		return text.Format(lang, "lang.no_such_local_time")
	}
}
