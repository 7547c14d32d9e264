package conversation

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// failed answers a turn that could not be carried out.
func (t *turn) failed(err error) []Reply {
	return []Reply{{Text: t.errText(err)}}
}

// errText is the chat text of an error: a coded error as the catalogue
// words it (the manager's refusals are whole sentences there; its own
// English message is made one), or a short generic one. It never shows
// internals, a URL's query, or a secret (I10).
func (t *turn) errText(err error) string {
	var ue *tasks.UserError
	if errors.As(err, &ue) {
		if msg, _ := text.Error(t.lang, ue); msg != ue.Msg {
			return Redact(msg)
		}
		return Redact(sentence(ue.Msg))
	}
	if msg, ok := text.Error(t.lang, err); ok {
		return Redact(sentence(msg))
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return t.tr("errors.not_found")
	case errors.Is(err, tasks.ErrForbidden):
		return t.tr("errors.forbidden")
	case errors.Is(err, tasks.ErrNotOwner), errors.Is(err, store.ErrUnavailable):
		return t.tr("errors.unavailable")
	}
	t.c.log.Error().Str("channel", t.m.Channel).Err(err).Msg("chat command failed")
	return t.tr("errors.internal")
}

// sentence capitalises a message and ends it with a full stop; a Chinese
// message is left as its catalogue words it.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.Is(unicode.Han, last) || strings.HasSuffix(s, ideographicFullStop) {
		return s // a Chinese message: its own punctuation
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}

var (
	// A URL ends at CJK or full-width punctuation too (as in history's
	// redactor, conversation/memory).
	reURL    = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x{3000}-\x{303F}\x{FF00}-\x{FFEF}]+`)
	reSecret = regexp.MustCompile(`(?i)\b(hin_[0-9a-f]{8,}|whsec_[A-Za-z0-9+/=]{8,}|bearer\s+\S+|bot\d+:[A-Za-z0-9_-]{20,})`)
)

// Redact removes what must not be shown in chat from a message: a URL's
// credentials, query and fragment, and anything shaped like a token.
func Redact(s string) string {
	s = reURL.ReplaceAllStringFunc(s, func(u string) string {
		trail := ""
		for u != "" && strings.ContainsAny(u[len(u)-1:], ".,;:)]") {
			trail = u[len(u)-1:] + trail
			u = u[:len(u)-1]
		}
		return ShowURL(u) + trail
	})
	return reSecret.ReplaceAllString(s, "[redacted]")
}
