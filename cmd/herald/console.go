package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	chconsole "github.com/herald-bridge/herald/channels/console"
	hook "github.com/herald-bridge/herald/webhook"
	webconsole "github.com/herald-bridge/herald/webhook/console"
)

// The browser console (GET /console): this file wires it to the service
// and gives the CLI its sign-in and sign-out commands.

// consoleSessions is the store of console sign-in codes and sessions.
func (s *service) consoleSessions() *webconsole.Sessions {
	return &webconsole.Sessions{KV: s.store.Channels(), Dedup: s.store.Dedup()}
}

// mountConsole mounts GET /console and its API on the listener.
func (s *service) mountConsole() {
	c := webconsole.New(webconsole.Options{
		Manager:  s.manager,
		Sessions: s.consoleSessions(),
		SignedIn: func(principal string) {
			s.log.Info().Str("audit", "console_sign_in").Str("by", principal).Msg("audit")
		},
		TLS:       s.server.TLS(),
		PublicURL: s.publicURL,
		Sources: func() []string {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := []string{"test"}
			for name := range s.cfg.Inbound {
				out = append(out, "hook:"+name)
			}
			return out
		},
		KindOf: func(recipient string) string {
			if r, err := s.table.Resolve(recipient); err == nil {
				return string(r.To.Kind)
			}
			if k, _, ok := strings.Cut(recipient, ":"); ok {
				return k
			}
			return "named"
		},
		Recipients: recipientDesk{s},
	})
	c.Mount(s.server)
}

func (s *service) publicURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Server.PublicURL
}

// consoleBase is where an operator's browser reaches the console: the
// public URL, else the listen address (a wildcard one as loopback).
func (s *service) consoleBase() string {
	if pub := strings.TrimRight(s.publicURL(), "/"); pub != "" {
		return pub
	}
	scheme := "http"
	if s.server.TLS() {
		scheme = "https"
	}
	addr := s.server.Addr()
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return scheme + "://" + addr
}

// consoleLogin is the result of console.login.
type consoleLogin struct {
	Principal string    `json:"principal"`
	Link      string    `json:"link"`
	Code      string    `json:"code"`
	Expires   time.Time `json:"expires"`
}

// mountConsoleAdmin registers console.login and console.logout on the admin API.
func (s *service) mountConsoleAdmin(a *hook.Admin) {
	a.Register("console.login", func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in struct {
			As    string `json:"as"`
			Valid string `json:"valid"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, hook.BadInput("request body does not have the expected fields")
		}
		p := s.manager.Policy()
		principal := ""
		if in.As != "" {
			if !chconsole.ValidName(in.As) {
				return nil, hook.BadInput("a name has 1-32 letters, digits, '-', '_' or '.'")
			}
			principal = "console:" + in.As
			if !p.IsAdmin(principal) {
				return nil, hook.BadInput(principal + " is not an admin; add it to policy.admins first")
			}
		} else {
			for _, adm := range p.Admins {
				if strings.HasPrefix(adm, "console:") {
					principal = adm
					break
				}
			}
			if principal == "" {
				return nil, hook.BadInput("policy.admins names no console:NAME admin; add one, or pass --as NAME for an admin console:NAME")
			}
		}
		ttl := webconsole.DefaultCodeTTL
		if in.Valid != "" {
			d, err := time.ParseDuration(in.Valid)
			if err != nil || d < time.Second || d > webconsole.MaxCodeTTL {
				return nil, hook.BadInput("--valid takes a duration from 1s to 1h, e.g. 10m")
			}
			ttl = d
		}
		code, exp, err := s.consoleSessions().NewCode(ctx, principal, ttl)
		if err != nil {
			return nil, err
		}
		return consoleLogin{Principal: principal, Link: s.consoleBase() + "/console#code=" + code, Code: code, Expires: exp.UTC()}, nil
	})
	a.Register("console.logout", func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := s.consoleSessions().RevokeAll(ctx); err != nil {
			return nil, err
		}
		return map[string]bool{"revoked": true}, nil
	})
}

func cmdConsole(e *env, args []string) int {
	as := e.flags.String("as", "", "sign in as the admin console:NAME (default: the first console: admin in policy.admins)")
	valid := e.flags.String("valid", "", "how long the sign-in code works (default 10m, at most 1h)")
	all := e.flags.Bool("all", false, "logout: end every console session and unused sign-in code")
	sub, code, ok := e.parseOne(args, "say login or logout --all")
	if !ok {
		return code
	}
	switch sub {
	case "login":
		var out consoleLogin
		if c := e.do("console.login", map[string]string{"as": *as, "valid": *valid}, &out, 10*time.Second); c != exitOK {
			return c
		}
		if e.json {
			e.printJSON(out)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "Open this link in your browser to sign in to the console as %s (once, until %s):\n%s\n",
			out.Principal, out.Expires.Local().Format("15:04:05"), out.Link)
		fmt.Fprintf(e.stdout, "Or open %s and enter the code %s\n", strings.TrimSuffix(out.Link, "#code="+out.Code), out.Code)
		return exitOK
	case "logout":
		if !*all {
			return e.usage("logout needs --all: it ends every console session")
		}
		if c := e.do("console.logout", map[string]bool{"all": true}, nil, 10*time.Second); c != exitOK {
			return c
		}
		if e.json {
			e.printJSON(map[string]bool{"revoked": true})
			return exitOK
		}
		fmt.Fprintln(e.stdout, "Every console session has ended; sign in again with herald console login.")
		return exitOK
	}
	return e.usage("unknown subcommand " + sub + "; say login or logout --all")
}
