package conversation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-bridge/herald/conversation/memory"
)

// This file is the conversation history in chat (README, Memory): every
// answered turn is kept in the asker's log — a group's turns in the
// group's log — and /history searches it, /forget deletes it.

// SuggestSearch is the assistant's read-only action that searches the
// asker's own history (in a group: that group's), as /history does.
const SuggestSearch = "search_history"

// MaxQuery bounds a history search, in characters.
const MaxQuery = 200

// history reads "/history <words> [page N]" (also "第 2 页").
func (p *argParser) history() error {
	toks := p.toks
	page := 1
	if n := len(toks); n >= 2 && !toks[n-2].quoted && (strings.EqualFold(toks[n-2].text, "page") || toks[n-2].text == "页") {
		v, err := strconv.Atoi(toks[n-1].text)
		if err != nil || v < 1 || v > memory.MaxPage {
			return usageErr("history", CodeUsage, fmt.Sprintf("A page is a number from 1 to %d.", memory.MaxPage),
				fmt.Sprintf("页码是 1 到 %d 之间的数字。", memory.MaxPage))
		}
		page, toks = v, toks[:n-2]
	} else if n >= 1 && !toks[n-1].quoted {
		if v, ok := chinesePage(toks[n-1].text); ok {
			page, toks = v, toks[:n-1]
		}
	}
	parts := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.quoted {
			parts = append(parts, `"`+t.text+`"`)
		} else {
			parts = append(parts, t.text)
		}
	}
	q := strings.Join(parts, " ")
	switch {
	case memory.ParseQuery(q).Empty():
		return usageErr("history", CodeUsage, "What should I look for?", "要搜索什么？")
	case utf8.RuneCountInString(q) > MaxQuery:
		return usageErr("history", CodeUsage, fmt.Sprintf("That is too long to search for (%d characters at most).", MaxQuery),
			fmt.Sprintf("搜索内容太长（最多 %d 字）。", MaxQuery))
	}
	p.cmd.Query, p.cmd.Page = q, page
	return nil
}

// chinesePage reads "第2页".
func chinesePage(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "第")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, "页")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(rest)
	return v, err == nil && v >= 1 && v <= memory.MaxPage
}

// logOf is the history log this turn belongs to.
func (t *turn) logOf() string { return memory.LogOf(t.m.Principal, t.m.Chat, t.m.Group) }

func (t *turn) noMemory() []Reply {
	return t.reply("Conversation history is not kept here.", "此处不保存对话历史。")
}

// history searches the asker's history (in a group: the group's).
func (t *turn) history(query string, page int) []Reply {
	k := t.c.o.Memory
	if k == nil {
		return t.noMemory()
	}
	p, err := k.Search(t.ctx, t.logOf(), query, page)
	if errors.Is(err, memory.ErrEmptyQuery) {
		u := usage["history"]
		return t.reply("What should I look for? Usage: "+u[0], "要搜索什么？用法："+u[1])
	}
	if err != nil {
		return t.failed(err)
	}
	return []Reply{{Text: t.showHits(query, p)}}
}

func (t *turn) showHits(query string, p memory.Page) string {
	shown := clipText(query, 40)
	where := t.tr("your history", "你的历史")
	if t.m.Group {
		where = t.tr("this group's history", "本群的历史")
	}
	if len(p.Turns) == 0 {
		if p.Page > 1 {
			return t.tr(fmt.Sprintf("No more matches for %q in %s.", shown, where),
				fmt.Sprintf("%s中没有更多与「%s」相符的记录。", where, shown))
		}
		return t.tr(fmt.Sprintf("Nothing in %s matches %q.", where, shown),
			fmt.Sprintf("%s中没有与「%s」相符的记录。", where, shown))
	}
	var b strings.Builder
	b.WriteString(t.tr(fmt.Sprintf("%q in %s, newest first (page %d):\n", shown, where, p.Page),
		fmt.Sprintf("%s中的「%s」，最新在前（第 %d 页）：\n", where, shown, p.Page)))
	for _, tr := range p.Turns {
		who := t.tr("you", "你")
		if tr.Principal != t.m.Principal {
			who = tr.Principal
		}
		fmt.Fprintf(&b, "%s  %s: %s", t.when(tr.At), who, clipText(tr.Text, 80))
		if tr.Reply != "" {
			fmt.Fprintf(&b, t.tr(" — herald: %s", " —— herald：%s"), clipText(tr.Reply, 60))
		}
		b.WriteString("\n")
	}
	if p.More {
		fmt.Fprintf(&b, t.tr("More: /history %s page %d", "更多：/history %s page %d"), query, p.Page+1)
	}
	return strings.TrimRight(b.String(), "\n")
}

// clipText keeps a stored text to one short line.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// forget deletes the asker's history: in a private chat their whole log,
// in a group their own turns in the group's log.
func (t *turn) forget() []Reply {
	k := t.c.o.Memory
	if k == nil {
		return t.noMemory()
	}
	who := "" // the whole log is the asker's
	if t.m.Group {
		who = t.m.Principal
	}
	n, err := k.Forget(t.ctx, t.logOf(), who)
	if err != nil {
		return t.failed(err)
	}
	if t.m.Group {
		return t.reply(fmt.Sprintf("Deleted your %d turn(s) in this group's history; nothing of them can be searched any more.", n),
			fmt.Sprintf("已删除你在本群历史中的 %d 条记录，它们再也搜索不到了。", n))
	}
	return t.reply(fmt.Sprintf("Deleted your history (%d turn(s)); nothing of it can be searched any more.", n),
		fmt.Sprintf("已删除你的历史（%d 条），再也搜索不到了。", n))
}

// remember keeps an answered turn in its log. Searches and /forget are
// not kept (a search would find itself next time; a forget must leave
// nothing), nor button presses, nor a cancelled turn (I9).
func (c *Core) remember(ctx context.Context, m Message, replies []Reply) {
	k := c.o.Memory
	if k == nil || m.Button != nil || ctx.Err() != nil || strings.TrimSpace(m.Text) == "" {
		return
	}
	if cmd, err := Parse(m.Text, c.o.BotName, c.zone()); err == nil || !errors.Is(err, ErrNotCommand) {
		if !cmd.Addressed || cmd.Name == "history" || cmd.Name == "forget" {
			return
		}
	}
	var said []string
	for _, r := range replies {
		if r.Text != "" {
			said = append(said, r.Text)
		}
	}
	if err := k.Record(ctx, m.Principal, m.Chat, m.Group, m.Text, strings.Join(said, "\n")); err != nil {
		c.log.Warn().Str("channel", m.Channel).Err(err).Msg("turn not kept in history")
	}
}

// searchFor answers the assistant's search_history: the same search as
// /history, first page, in the asker's own log.
func (t *turn) searchFor(query string) []Reply {
	query = strings.TrimSpace(query)
	if query == "" || utf8.RuneCountInString(query) > MaxQuery || !plainLine(query) || memory.ParseQuery(query).Empty() {
		return t.unavailable(fmt.Errorf("%w: search without words", errBadSuggestion))
	}
	return t.history(query, 1)
}
