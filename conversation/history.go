package conversation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/conversation/text"
)

// This file is the conversation history in chat (docs/chat.md, Memory): every
// answered turn is kept in the asker's log — a group's turns in the
// group's log — and /history searches it, /forget deletes it.

// SuggestSearch is the assistant's read-only action that searches the
// asker's own history (in a group: that group's), as /history does.
const SuggestSearch = "search_history"

// MaxQuery bounds a history search, in characters.
const MaxQuery = 200

// history reads "/history <words> [page N]" (or a page as another
// language writes it: text.Words.Page and PageAround).
func (p *argParser) history() error {
	toks := p.toks
	page := 1
	if n := len(toks); n >= 2 && !toks[n-2].quoted && isWord(toks[n-2].text, wordsPage) {
		v, err := strconv.Atoi(toks[n-1].text)
		if err != nil || v < 1 || v > memory.MaxPage {
			return usageErr("history", CodeUsage, "history.page_is_number_from", memory.MaxPage)
		}
		page, toks = v, toks[:n-2]
	} else if n >= 1 && !toks[n-1].quoted {
		if v, ok := pageAround(toks[n-1].text); ok {
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
		return usageErr("history", CodeUsage, "history.what_should_i_look")
	case utf8.RuneCountInString(q) > MaxQuery:
		return usageErr("history", CodeUsage, "history.that_is_too_long", MaxQuery)
	}
	p.cmd.Query, p.cmd.Page = q, page
	return nil
}

// pageAround reads a page number written between a language's two words
// (text.Words.PageAround), as one token.
func pageAround(s string) (int, bool) {
	for _, c := range text.Catalogs() {
		for _, around := range c.Words.PageAround {
			rest, ok := strings.CutPrefix(s, around[0])
			if !ok {
				continue
			}
			rest, ok = strings.CutSuffix(rest, around[1])
			if !ok {
				continue
			}
			v, err := strconv.Atoi(rest)
			return v, err == nil && v >= 1 && v <= memory.MaxPage
		}
	}
	return 0, false
}

// historySearch answers a turn's /history and /forget over the
// conversation memory.
type historySearch struct{ t *turn }

// logOf is the history log this turn belongs to.
func (hs historySearch) logOf() string {
	return memory.LogOf(hs.t.m.Principal, hs.t.m.Chat, hs.t.m.Group)
}

func (hs historySearch) noMemory() []Reply {
	return hs.t.reply("history.conversation_history_is_not")
}

// history searches the asker's history (in a group: the group's).
func (hs historySearch) history(query string, page int) []Reply {
	k := hs.t.c.o.Memory
	if k == nil {
		return hs.noMemory()
	}
	p, err := k.Search(hs.t.ctx, hs.logOf(), query, page)
	if errors.Is(err, memory.ErrEmptyQuery) {
		return hs.t.reply("history.empty_query", usageLine(hs.t.lang, "history"))
	}
	if err != nil {
		return hs.t.failed(err)
	}
	return []Reply{{Text: hs.showHits(query, p)}}
}

func (hs historySearch) showHits(query string, p memory.Page) string {
	shown := clipText(query, 40)
	where := hs.t.tr("history.your_history")
	if hs.t.m.Group {
		where = hs.t.tr("history.this_group_history")
	}
	if len(p.Turns) == 0 {
		if p.Page > 1 {
			return hs.t.tr("history.no_more_matches", shown, where)
		}
		return hs.t.tr("history.nothing_in_matches", where, shown)
	}
	var b strings.Builder
	b.WriteString(hs.t.tr("history.matches_page", shown, where, p.Page))
	for _, tr := range p.Turns {
		who := hs.t.tr("history.you")
		if tr.Principal != hs.t.m.Principal {
			who = tr.Principal
		}
		fmt.Fprintf(&b, "%s  %s: %s", hs.t.when(tr.At), who, clipText(tr.Text, 80))
		if tr.Reply != "" {
			fmt.Fprintf(&b, hs.t.tr("history.herald"), clipText(tr.Reply, 60))
		}
		b.WriteString("\n")
	}
	if p.More {
		fmt.Fprintf(&b, hs.t.tr("history.more_history_page"), query, p.Page+1)
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
func (hs historySearch) forget() []Reply {
	k := hs.t.c.o.Memory
	if k == nil {
		return hs.noMemory()
	}
	who := "" // the whole log is the asker's
	if hs.t.m.Group {
		who = hs.t.m.Principal
	}
	n, err := k.Forget(hs.t.ctx, hs.logOf(), who)
	if err != nil {
		return hs.t.failed(err)
	}
	if hs.t.m.Group {
		return hs.t.reply("history.deleted_your_turn_in", n)
	}
	return hs.t.reply("history.deleted_your_history_turn", n)
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
func (hs historySearch) searchFor(query string) []Reply {
	query = strings.TrimSpace(query)
	if query == "" || utf8.RuneCountInString(query) > MaxQuery || !plainLine(query) || memory.ParseQuery(query).Empty() {
		return plainTalk{hs.t}.unavailable(fmt.Errorf("%w: search without words", errBadSuggestion))
	}
	return hs.history(query, 1)
}
