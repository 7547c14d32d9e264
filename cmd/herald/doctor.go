package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/egress/probe"
	"github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/tasks"
)

// Bounds of one doctor run.
const (
	// doctorParallel is how many endpoints are tried at once.
	doctorParallel = 8
	// doctorMaxSources is how many distinct source hosts are tried; the
	// rest are counted in one line.
	doctorMaxSources = 100
	// doctorBound bounds the whole run inside the service, within the
	// listener's 60 s to write an answer; a check still waiting then
	// reports a timeout.
	doctorBound = 50 * time.Second
	// doctorWait is the CLI's wait for the answer.
	doctorWait = doctorBound + 15*time.Second
)

// doctor answers the admin API's doctor: every configured endpoint tried
// over its own route (SPEC §17), one result each.
func (o *adminOps) doctor(ctx context.Context, _ json.RawMessage) (any, error) {
	s := o.s
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, doctorBound)
	defer cancel()
	probes := s.doctorProbes(ctx, cfg)
	return probe.Run(ctx, probes, doctorParallel), nil
}

// doctorProbes lists the endpoints of cfg and the catalog: the chat
// platforms, each recipient's host, the model API, each distinct source
// host with its route.
func (s *service) doctorProbes(ctx context.Context, cfg *configs.Config) []probe.Probe {
	var out []probe.Probe
	secrets := cfg.ProxySecrets()
	if t := cfg.Channels.Telegram; t.Token != "" {
		base := strings.TrimRight(t.APIURL, "/")
		out = append(out, probe.Probe{Check: "telegram getMe", Target: base, Options: platformOptions(s.route(t.Proxy), 0),
			Secrets: append([]string{t.Token}, secrets...),
			Request: func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, base+"/bot"+t.Token+"/getMe", nil)
			},
			Accept: apiAnswer("ok", true)})
	}
	if f := cfg.Channels.Feishu; f.AppID != "" && f.AppSecret != "" {
		base := strings.TrimRight(f.BaseURL, "/")
		out = append(out, probe.Probe{Check: "feishu tenant token", Target: base, Options: platformOptions(s.route(f.Proxy), 0),
			Secrets: append([]string{f.AppSecret}, secrets...),
			Request: func(ctx context.Context) (*http.Request, error) {
				body, _ := json.Marshal(map[string]string{"app_id": f.AppID, "app_secret": f.AppSecret})
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+feishu.TokenPath, bytes.NewReader(body))
				if err == nil {
					req.Header.Set("Content-Type", "application/json; charset=utf-8")
				}
				return req, err
			},
			Accept: apiAnswer("code", float64(0))})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Recipients)) {
		sc := cfg.Recipients[name].Sink()
		ep, ok := sc.(delivery.Endpointer)
		if !ok {
			continue // an address: its channel is checked above; e-mail: below
		}
		out = append(out, probe.Probe{Check: "recipient " + name, Target: ep.Endpoint(), Secrets: append(sc.Secrets(), secrets...),
			Options: egress.Options{AllowPrivate: cfg.Policy.AllowPrivateNetworks, Route: s.sinkRoute(sc)}})
	}
	out = append(out, s.smtpProbes(cfg, secrets)...)
	if a := cfg.Assistant; a.Enabled {
		out = append(out, s.modelProbe(a, cfg, secrets))
	}
	return append(out, s.sourceProbes(ctx, cfg, secrets)...)
}

// smtpProbes connect to the SMTP server once per route the e-mail
// recipients name (direct when none names a proxy).
func (s *service) smtpProbes(cfg *configs.Config, secrets []string) []probe.Probe {
	if cfg.SMTP == nil || cfg.SMTP.Host == "" {
		return nil
	}
	routes := map[string]bool{}
	for _, r := range cfg.Recipients {
		if r.Email != nil {
			routes[r.Email.Proxy] = true
		}
	}
	if len(routes) == 0 {
		routes[""] = true
	}
	var out []probe.Probe
	for _, name := range slices.Sorted(maps.Keys(routes)) {
		var route *egress.Route
		if name != "" {
			route = s.route(name) // unnamed: e-mail goes direct
		}
		out = append(out, probe.Probe{Check: "smtp server", Target: "smtp://" + cfg.SMTP.Addr(), Secrets: secrets,
			Options: egress.Options{AnyAddress: true, Route: route}})
	}
	return out
}

// modelProbe asks the model API for its models (a read, never a
// completion) when the endpoint is an OpenAI-style chat-completions URL;
// otherwise it only connects.
func (s *service) modelProbe(a configs.Assistant, cfg *configs.Config, secrets []string) probe.Probe {
	p := probe.Probe{Check: "model API", Target: a.Endpoint, Options: assistantEgress(cfg, s.route), Secrets: append([]string{a.APIKey}, secrets...)}
	if models, ok := strings.CutSuffix(strings.TrimRight(a.Endpoint, "/"), "/chat/completions"); ok {
		p.Request = func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, models+"/models", nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+a.APIKey)
			}
			return req, err
		}
	}
	return p
}

// sourceProbes try each distinct source host (with its route) once: a
// HEAD of one of its task URLs. Tasks given in chat take the default route.
func (s *service) sourceProbes(ctx context.Context, cfg *configs.Config, secrets []string) []probe.Probe {
	type hostRoute struct{ origin, proxy string }
	seen := map[hostRoute]string{} // → a task URL on that host
	var order []hostRoute
	skipped := 0
	add := func(raw, proxy string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		k := hostRoute{u.Scheme + "://" + u.Host, proxy}
		if _, ok := seen[k]; ok {
			return
		}
		if len(order) >= doctorMaxSources {
			skipped++
			return
		}
		seen[k] = raw
		order = append(order, k)
	}
	for after := ""; ; {
		page, next, err := s.manager.ListPage(ctx, after, tasks.MaxPage)
		if err != nil {
			break
		}
		for _, t := range page {
			add(t.Source.URL, t.Source.Proxy)
		}
		if next == "" || len(page) == 0 {
			break
		}
		after = next
	}
	allow := cfg.Policy.AllowPrivateNetworks
	out := make([]probe.Probe, 0, len(order))
	for _, k := range order {
		target := seen[k]
		out = append(out, probe.Probe{Check: "source host", Target: target, Secrets: secrets,
			Options: egress.Options{AllowPrivate: allow, Route: s.route(k.proxy)},
			Request: func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodHead, target, nil)
			}})
	}
	if skipped > 0 {
		s.log.Info().Int("hosts", skipped).Msg("doctor: more source hosts than it tries; the rest were not tried")
	}
	return out
}

// apiAnswer accepts a JSON answer whose field key holds want (Telegram's
// "ok": true, Feishu's "code": 0).
func apiAnswer(key string, want any) func([]byte) string {
	return func(body []byte) string {
		var m map[string]any
		if json.Unmarshal(body, &m) != nil {
			return "the answer is not JSON"
		}
		if m[key] != want {
			if msg, ok := m["description"].(string); ok {
				return msg
			}
			if msg, ok := m["msg"].(string); ok {
				return msg
			}
			return fmt.Sprintf("%s is %v", key, m[key])
		}
		return ""
	}
}

func cmdDoctor(e *env, args []string) int {
	if _, code, ok := e.parse(args); !ok {
		return code
	}
	var results []probe.Result
	if code := e.do("doctor", struct{}{}, &results, doctorWait); code != exitOK {
		return code
	}
	failed := 0
	for _, r := range results {
		if !r.OK {
			failed++
		}
	}
	if e.json {
		if results == nil {
			results = []probe.Result{}
		}
		e.printJSON(results)
	} else {
		rows := make([][]string, 0, len(results))
		for _, r := range results {
			rows = append(rows, []string{r.Result, r.Check, r.Target, r.Route, fmt.Sprintf("%d ms", r.Millis), r.Detail})
		}
		table(e.stdout, "RESULT\tCHECK\tTARGET\tROUTE\tTIME\tDETAIL", rows)
		if len(results) == 0 {
			fmt.Fprintln(e.stdout, "nothing to check: no channel, recipient, assistant or source is configured")
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "herald doctor: %d of %d checks failed\n", failed, len(results))
		return exitFailure
	}
	return exitOK
}
