package delivery

import (
	"errors"
	"net/url"
	"strings"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/configs/section"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store"
)

// SinkConfig is the section of a named recipient that says which sink
// carries its pushes (recipients.<name>.<key> in the config file). The
// sink's package owns it: its fields and YAML keys, its checks and the
// sink built from it. A sink is registered by one field of
// configs.Recipient whose type implements SinkConfig; the field's yaml
// key is the section's key and should equal Kind.
type SinkConfig interface {
	// Kind names the sink in metrics, logs and redacted addresses
	// ("webhook:ops"). It is never secret.
	Kind() AddressKind
	// Check validates the section, reporting every problem through c at
	// its line. It must not print values that may be secret.
	Check(c section.Checker)
	// NewSink builds the sink for one recipient from the checked section.
	// Its errors must not carry the section's secrets.
	NewSink(deps SinkDeps) (Sink, error)
	// Secrets lists the section's values that must never appear in logs,
	// errors or metrics (I10): a hook URL whose path or query holds a
	// token, a signing secret. Errors from NewSink are scrubbed of them.
	Secrets() []string
}

// Endpointer is a SinkConfig that names the endpoint its pushes go to,
// for a reachability check that never pushes (herald doctor). Only the
// URL's scheme and host are tried and shown: its path or query may hold
// the recipient's token.
type Endpointer interface {
	Endpoint() string
}

// SinkDeps are what every sink may be built with.
type SinkDeps struct {
	// Name is the recipient's configured name.
	Name string
	// Egress configures the guarded outbound client (SSRF guard, no
	// redirects); build HTTP clients with egress.Client(Egress).
	Egress egress.Options
	Store  store.Store
	Log    zerolog.Logger
	// Sections are the top-level config sections the recipients of one
	// kind share, by YAML key (smtp: the e-mail server); a sink asserts
	// its own section's type and refuses to build without it.
	Sections map[string]any
}

// BuildSink builds cfg's sink, with the section's secrets redacted from
// the error.
func BuildSink(cfg SinkConfig, deps SinkDeps) (Sink, error) {
	s, err := cfg.NewSink(deps)
	if err == nil {
		return s, nil
	}
	if msg := err.Error(); Redact(msg, cfg.Secrets()) != msg {
		return nil, errors.New(Redact(msg, cfg.Secrets()))
	}
	return nil, err
}

// Redact removes secrets from msg for a log line or an error (I10). A
// secret that is a URL keeps only its scheme and host, and its path and
// query are removed wherever they appear alone: hook URLs carry their
// token in either (…/hook/<token>, ?access_token=…, ?key=…).
func Redact(msg string, secrets []string) string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			msg = strings.ReplaceAll(msg, s, "…")
			continue
		}
		msg = strings.ReplaceAll(msg, s, u.Scheme+"://"+u.Host+"/…")
		if len(u.Path) > 1 {
			msg = strings.ReplaceAll(msg, u.Path, "/…")
		}
		if u.RawQuery != "" {
			msg = strings.ReplaceAll(msg, u.RawQuery, "…")
		}
	}
	return msg
}
