package delivery

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Table is the Router built from config: one sink per transport for
// literal addresses plus the named recipients. Swap replaces it on reload
// without touching queued work.
type Table struct {
	mu       sync.RWMutex
	bykind   map[AddressKind]Sink
	dedups   map[AddressKind]bool
	named    map[string]Route
	lang     string
	zone     *time.Location
	langs    LangSource
	disabled map[AddressKind]string
}

// LangSource tells the language a chat prefers (Telegram language_code
// remembered by the conversation side); "" when unknown.
type LangSource func(address string) string

// TableConfig builds a Table.
type TableConfig struct {
	Sinks    map[AddressKind]Sink // literal-address transports: telegram, feishu, inbox
	Named    map[string]Route
	Lang     string
	Zone     *time.Location
	Langs    LangSource
	Disabled map[AddressKind]string // transport → why it is off (for a clear error)
}

// NewTable returns a router over cfg.
func NewTable(cfg TableConfig) *Table {
	t := &Table{}
	t.Swap(cfg)
	return t
}

// Swap replaces the routing table (config reload).
func (t *Table) Swap(cfg TableConfig) {
	if cfg.Zone == nil {
		cfg.Zone = time.UTC
	}
	if cfg.Lang == "" {
		cfg.Lang = "en"
	}
	dedups := map[AddressKind]bool{}
	for k, s := range cfg.Sinks {
		if d, ok := s.(Deduplicating); ok {
			dedups[k] = d.Dedups(Address{Kind: k})
		}
	}
	t.mu.Lock()
	t.bykind, t.dedups, t.named, t.lang, t.zone, t.langs, t.disabled = cfg.Sinks, dedups, cfg.Named, cfg.Lang, cfg.Zone, cfg.Langs, cfg.Disabled
	t.mu.Unlock()
}

// Resolve implements Router.
func (t *Table) Resolve(recipient string) (Route, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !IsLiteral(recipient) {
		r, ok := t.named[recipient]
		if !ok {
			return Route{}, fmt.Errorf("no recipient named %q", recipient)
		}
		if r.Lang == "" {
			r.Lang = t.lang
		}
		if r.Zone == nil {
			r.Zone = t.zone
		}
		if d, ok := r.Sink.(Deduplicating); ok {
			r.Dedups = d.Dedups(r.To)
		}
		r.DedupWindow = dedupWindow(r.Sink)
		if rp, ok := r.Sink.(Retrying); ok {
			r.Retry = rp.RetryPolicy(r.To)
		}
		return r, nil
	}
	a, err := ParseAddress(recipient)
	if err != nil {
		return Route{}, err
	}
	s, ok := t.bykind[a.Kind]
	if !ok || s == nil {
		why := t.disabled[a.Kind]
		if why == "" {
			why = "not configured"
		}
		return Route{}, fmt.Errorf("%s delivery is off: %s: %w", a.Kind, why, ErrTransportOff)
	}
	lang := t.lang
	if t.langs != nil {
		if l := t.langs(recipient); l != "" {
			lang = l
		}
	}
	return Route{Sink: s, To: a, Lang: lang, Zone: t.zone, Dedups: t.dedups[a.Kind], DedupWindow: dedupWindow(s)}, nil
}

func dedupWindow(s Sink) time.Duration {
	if w, ok := s.(Windowed); ok {
		return w.DedupWindow()
	}
	return 0
}

var _ Router = (*Table)(nil)

// ErrTransportOff means a recipient's transport is switched off (e.g. its
// token is not set): its pushes wait rather than fail.
var ErrTransportOff = errors.New("transport is off")
