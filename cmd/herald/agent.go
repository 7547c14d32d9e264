package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/webhook"
	"github.com/herald-bridge/herald/webhook/agentapi"
)

// mountAgents registers the admin operations on agent tokens and mounts
// the agent API, apart from the admin API (docs/agents.md, Agents).
func (s *service) mountAgents(a *webhook.Admin) {
	tokens := &agentapi.Tokens{KV: s.store.Channels()}
	a.Register("agent.token", withInput(func(ctx context.Context, in struct{ Name string }) (any, error) {
		tok, err := tokens.Issue(ctx, in.Name)
		if errors.Is(err, agentapi.ErrBadName) {
			return nil, webhook.BadInput(err.Error())
		}
		if err != nil {
			return nil, err
		}
		s.log.Info().Str("audit", "agent_token").Str("by", "cli").Str("agent", "agent:"+in.Name).Msg("audit")
		return agentTokenView{Principal: "agent:" + in.Name, Token: tok}, nil
	}))
	a.Register("agent.revoke", withInput(func(ctx context.Context, in struct{ Name string }) (any, error) {
		err := tokens.Revoke(ctx, in.Name)
		if errors.Is(err, store.ErrNotFound) {
			return nil, &webhook.Error{Status: 404, Code: "not_found", Msg: fmt.Sprintf("agent %q has no token", in.Name)}
		}
		if err != nil {
			return nil, err
		}
		s.log.Info().Str("audit", "agent_revoke").Str("by", "cli").Str("agent", "agent:"+in.Name).Msg("audit")
		return map[string]string{"revoked": "agent:" + in.Name}, nil
	}))
	a.Register("agent.list", func(ctx context.Context, _ json.RawMessage) (any, error) { return tokens.List(ctx) })

	api := agentapi.New(agentapi.Options{
		Tokens: tokens, Tasks: s.manager, Inbox: s.store.Inbox(),
		Render: func(it store.InboxItem) (string, string) {
			s.mu.Lock()
			lang, zone := s.cfg.Language, s.cfg.Location
			s.mu.Unlock()
			v := viewInbox(it, lang, zone)
			return v.Title, v.Text
		},
	})
	s.server.Handle("/agent/v1/{op}", api.ServeHTTP)
}

type agentTokenView struct {
	Principal string `json:"principal"`
	Token     string `json:"token"`
}

func cmdAgent(e *env, args []string) int {
	out := e.flags.String("out", "", "with token: write the token to this file (0600) instead of printing it")
	pos, code, ok := e.parse(args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return e.usage("want token NAME, revoke NAME or list")
	}
	switch pos[0] {
	case "list":
		return callTable(e, "agent.list", struct{}{}, 10*time.Second, "PRINCIPAL\tTOKEN ISSUED", func(a agentapi.Agent) []string {
			return []string{a.Principal, a.CreatedAt.Local().Format("2006-01-02 15:04 MST")}
		})
	case "token", "revoke":
		if len(pos) != 2 {
			return e.usage(pos[0] + " needs one agent NAME")
		}
	default:
		return e.usage(fmt.Sprintf("unknown subcommand %q", pos[0]))
	}
	name := pos[1]
	if pos[0] == "revoke" {
		var r map[string]string
		if code := e.do("agent.revoke", map[string]string{"name": name}, &r, 10*time.Second); code != exitOK {
			return code
		}
		if e.json {
			e.printJSON(r)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "revoked the token of agent:%s; its calls now fail\n", name)
		return exitOK
	}
	var t agentTokenView
	if code := e.do("agent.token", map[string]string{"name": name}, &t, 10*time.Second); code != exitOK {
		return code
	}
	if *out != "" {
		if err := writePrivate(*out, t.Token+"\n"); err != nil {
			fmt.Fprintf(e.stderr, "herald agent: the token was issued but could not be written: %v\nRun 'herald agent token %s' again.\n", err, name)
			return exitFailure
		}
		if e.json {
			e.printJSON(map[string]string{"principal": t.Principal, "token_file": *out})
			return exitOK
		}
		fmt.Fprintf(e.stdout, "token for %s written to %s (0600); any earlier token of it no longer works\n", t.Principal, *out)
		return exitOK
	}
	if e.json {
		e.printJSON(t)
		return exitOK
	}
	fmt.Fprintln(e.stdout, t.Token)
	fmt.Fprintf(e.stderr, "This is the only time the token of %s is shown; any earlier one no longer works.\nUse it with: herald mcp --token-file FILE\n", t.Principal)
	return exitOK
}

// writePrivate writes s to path readable by its owner only.
func writePrivate(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
