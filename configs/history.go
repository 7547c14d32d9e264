package configs

import (
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// Conversation history bounds (docs/chat.md, Memory).
const (
	DefaultHistoryRetention = 90 * 24 * time.Hour
	DefaultHistoryTurns     = 10000
	MaxHistoryRetention     = 10 * 365 * 24 * time.Hour
	MaxHistoryTurns         = 100000
	// MaxPersonaBytes bounds assistant.persona_file.
	MaxPersonaBytes = 16 << 10
)

// History bounds the conversation history kept per principal and per
// group chat: turns older than Retention and beyond the newest MaxTurns
// are deleted with their index entries.
type History struct {
	Retention Duration `yaml:"retention"` // default 90d
	MaxTurns  int      `yaml:"max_turns"` // default 10000
}

func (h *History) applyDefaults() {
	if h.Retention == 0 {
		h.Retention = Duration(DefaultHistoryRetention)
	}
	if h.MaxTurns == 0 {
		h.MaxTurns = DefaultHistoryTurns
	}
}

// history checks the history bounds and reads the assistant's persona.
func (v *validator) history() {
	h := v.cfg.History
	if r := h.Retention.D(); !v.d.bad["history.retention"] && (r < time.Hour || r > MaxHistoryRetention) {
		v.errf("history.retention", "must be between 1h and %dd", MaxHistoryRetention/(24*time.Hour))
	}
	if n := h.MaxTurns; n < 1 || n > MaxHistoryTurns {
		v.errf("history.max_turns", "must be between 1 and %d", MaxHistoryTurns)
	}
	v.persona()
}

// persona reads assistant.persona_file: Markdown text the admin owns, at
// most MaxPersonaBytes, relative to the config file.
func (v *validator) persona() {
	a := &v.cfg.Assistant
	if a.PersonaFile == "" {
		return
	}
	name := a.PersonaFile
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(v.d.file), name)
	}
	fi, err := os.Stat(name)
	if err != nil {
		v.errf("assistant.persona_file", "cannot read %s: %v", filepath.Base(name), unwrapPathError(err))
		return
	}
	if !fi.Mode().IsRegular() {
		v.errf("assistant.persona_file", "%s is not a regular file", filepath.Base(name))
		return
	}
	if fi.Size() > MaxPersonaBytes {
		v.errf("assistant.persona_file", "%s is %d bytes; at most %d", filepath.Base(name), fi.Size(), MaxPersonaBytes)
		return
	}
	b, err := os.ReadFile(name)
	if err != nil {
		v.errf("assistant.persona_file", "cannot read %s: %v", filepath.Base(name), unwrapPathError(err))
		return
	}
	if len(b) > MaxPersonaBytes || !utf8.Valid(b) {
		v.errf("assistant.persona_file", "%s must be UTF-8 text of at most %d bytes", filepath.Base(name), MaxPersonaBytes)
		return
	}
	a.Persona = string(b)
}
