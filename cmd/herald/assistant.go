package main

import (
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/delivery/egress"
)

// newAssistant builds the plain-language assistant the config asks for,
// or returns nil when it is off (Load has already warned why) or cannot
// be built; nil gives plain text the short help answer. Called at start
// and on every reload, so SIGHUP can switch it on, off or to another
// model; the model's part in notices follows it.
func newAssistant(cfg *configs.Config, route func(string) *egress.Route, log zerolog.Logger, notices *assistant.Notices) conversation.Assistant {
	c := newModel(cfg, route, log)
	notices.Set(c, cfg.Assistant.MaxPerHour, summarized(cfg))
	if c == nil {
		return nil
	}
	return c
}

// summarized are the tasks that ask for the model's summary of each
// notice (tasks[].summarize).
func summarized(cfg *configs.Config) []string {
	var out []string
	for _, t := range cfg.Tasks {
		if t.Summarize {
			out = append(out, t.ID)
		}
	}
	return out
}

// newModel builds the model client, or nil when it is off or cannot be
// built. Nothing logged here names the endpoint or the key.
func newModel(cfg *configs.Config, route func(string) *egress.Route, log zerolog.Logger) *assistant.Client {
	a := cfg.Assistant
	if !a.Enabled {
		return nil
	}
	eg := assistantEgress(cfg, route)
	c, err := assistant.New(assistant.Options{
		Endpoint: a.Endpoint, APIKey: a.APIKey, Model: a.Model, Timeout: a.Timeout.D(), Egress: eg,
		Persona: a.Persona,
	})
	if err != nil {
		log.Error().Err(err).Msg("assistant off: it cannot be built")
		return nil
	}
	log.Info().Str("model", a.Model).Int("max_per_hour", a.MaxPerHour).Msg("assistant on")
	return c
}

// assistantEgress is how the model API is reached: under the policy's
// guard, on the assistant's route. A local model server (local: true) is
// trusted at exactly its address and reached directly unless its section
// names a proxy: it is on this machine or network, not behind the
// default route's proxy.
func assistantEgress(cfg *configs.Config, route func(string) *egress.Route) egress.Options {
	a := cfg.Assistant
	eg := egress.Options{AllowPrivate: cfg.Policy.AllowPrivateNetworks, Route: route(a.Proxy)}
	if a.Local {
		eg.Trusted = a.TrustedEndpoint() // that one model server, not the network
		if a.Proxy == "" {
			eg.Route = nil
		}
	}
	return eg
}
