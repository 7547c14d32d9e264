package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/herald-bridge/herald/delivery/address"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation/memory"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	hook "github.com/herald-bridge/herald/webhook"
)

// turnView is one history turn for `herald history --json`.
type turnView struct {
	ID        string    `json:"id"`
	Log       string    `json:"log"`
	Principal string    `json:"principal"`
	Chat      string    `json:"chat"`
	Text      string    `json:"text"`
	Reply     string    `json:"reply"`
	At        time.Time `json:"at"`
}

// historyPage is the answer of history.search and history.list.
type historyPage struct {
	Log   string     `json:"log"`
	Page  int        `json:"page,omitempty"`
	More  bool       `json:"more"`
	Turns []turnView `json:"turns"`
}

func viewTurns(ts []store.Turn) []turnView {
	out := make([]turnView, 0, len(ts))
	for _, t := range ts {
		out = append(out, turnView{ID: t.ID, Log: t.Log, Principal: t.Principal, Chat: t.Chat, Text: t.Text, Reply: t.Reply, At: t.At})
	}
	return out
}

// newMemory builds the conversation history from the config.
func newMemory(s *service) (*memory.Keeper, error) {
	return memory.New(memory.Options{
		Store: s.store.History(), Retention: s.cfg.History.Retention.D(), MaxTurns: s.cfg.History.MaxTurns,
		Log: s.log.With().Str("component", "history").Logger(),
	})
}

// setHistoryBounds applies a reloaded config's history bounds.
func (s *service) setHistoryBounds(cfg *configs.Config) {
	if s.channels != nil && s.channels.memory != nil {
		s.channels.memory.SetBounds(cfg.History.Retention.D(), cfg.History.MaxTurns)
	}
}

// validLog reports whether s names a history log: a principal, or a group
// chat's address.
func validLog(s string) bool {
	if address.IsChat(s) {
		return true
	}
	if name, ok := strings.CutPrefix(s, "agent:"); ok {
		return name != "" && !strings.ContainsAny(name, " \t\n")
	}
	return delivery.ValidPrincipal(s)
}

const logHint = "give a principal (telegram:<id>, feishu:<open_id>, console:<name>) or a group chat (telegram:chat:<id>, feishu:chat:<id>)"

// historyIn is the body of history.search and history.list: the log they
// read, and how each pages it.
type historyIn struct {
	Log    string `json:"log"`
	Query  string `json:"query"`  // search
	Page   int    `json:"page"`   // search
	Before string `json:"before"` // list
	Limit  int    `json:"limit"`  // list
}

func (o *adminOps) searchHistory(ctx context.Context, in historyIn) (any, error) {
	if !validLog(in.Log) {
		return nil, hook.BadInput(logHint)
	}
	if in.Page < 0 || in.Page > memory.MaxPage {
		return nil, hook.BadInput(fmt.Sprintf("a page is a number from 1 to %d", memory.MaxPage))
	}
	p, err := o.s.channels.memory.Search(ctx, in.Log, in.Query, in.Page)
	if errors.Is(err, memory.ErrEmptyQuery) {
		return nil, hook.BadInput("give words to search for")
	}
	if err != nil {
		return nil, err
	}
	return historyPage{Log: in.Log, Page: p.Page, More: p.More, Turns: viewTurns(p.Turns)}, nil
}

func (o *adminOps) listHistory(ctx context.Context, in historyIn) (any, error) {
	if !validLog(in.Log) {
		return nil, hook.BadInput(logHint)
	}
	limit := min(max(in.Limit, 1), 500)
	ts, err := o.s.channels.memory.List(ctx, in.Log, in.Before, limit+1)
	if errors.Is(err, store.ErrNotFound) {
		return nil, hook.BadInput("unknown --before turn id")
	}
	if err != nil {
		return nil, err
	}
	more := len(ts) > limit
	return historyPage{Log: in.Log, More: more, Turns: viewTurns(ts[:min(len(ts), limit)])}, nil
}

func cmdHistory(e *env, args []string) int {
	page := e.flags.Int("page", 1, "with search: the page of 10 hits, newest first")
	limit := e.flags.Int("limit", 50, "with list: at most this many turns")
	pos, code, ok := e.parse(args)
	if !ok {
		return code
	}
	if len(pos) < 2 {
		return e.usage("want search PRINCIPAL WORDS or list PRINCIPAL")
	}
	var p historyPage
	switch pos[0] {
	case "search":
		if len(pos) < 3 {
			return e.usage("search needs PRINCIPAL and the words to look for")
		}
		in := map[string]any{"log": pos[1], "query": strings.Join(pos[2:], " "), "page": *page}
		if p, code, ok = callHistory(e, "history.search", in); ok {
			return code
		}
	case "list":
		if len(pos) != 2 {
			return e.usage("list needs exactly one PRINCIPAL")
		}
		if p, code, ok = callHistory(e, "history.list", map[string]any{"log": pos[1], "limit": *limit}); ok {
			return code
		}
	default:
		return e.usage(fmt.Sprintf("unknown subcommand %q", pos[0]))
	}
	if len(p.Turns) == 0 {
		fmt.Fprintln(e.stdout, "no turns")
		return exitOK
	}
	rows := make([][]string, 0, len(p.Turns))
	for _, t := range p.Turns {
		rows = append(rows, []string{t.ID, t.At.Local().Format("2006-01-02 15:04 MST"), t.Principal, oneLine(t.Text, 60), oneLine(t.Reply, 40)})
	}
	table(e.stdout, "ID\tWHEN\tWHO\tTEXT\tREPLY", rows)
	if p.More && pos[0] == "search" {
		fmt.Fprintf(e.stdout, "more: --page %d\n", p.Page+1)
	}
	return exitOK
}

// callHistory runs a history operation; done reports the command is over
// (an error, or --json output printed).
func callHistory(e *env, op string, in any) (historyPage, int, bool) {
	p, code, done := call[historyPage](e, op, in, 30*time.Second)
	return p, code, done
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return dash(s)
}
