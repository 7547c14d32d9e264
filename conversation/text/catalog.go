// Package text is what the conversation says to people and the words it
// reads from them, in every language it speaks: one Catalog per language,
// one file per Catalog (en.go, zh.go), every wording keyed by a stable code.
//
// Code asks for wording by key (Format(lang, key, args...)); a wording that
// takes arguments is a fmt format (indexed verbs, %[2]s, let a language
// put them in its own order). Keys are dotted: the first part names the
// subject ("taskcmds.paused_resume_starts_it").
//
// Coded errors. A domain package (tasks, tasks/schedule, tasks/transfer …)
// words its errors in plain English only, for logs, the CLI and English
// replies. To make one error speakable in other languages it gives the
// error a method
//
//	Coded() (code string, args []any, english string)
//
// (see Coded) returning a stable code "<package>.<code>", the arguments
// its wording takes and its English message, and adds the code to Errors
// in every catalogue but English (which may override the English). The
// conversation words any error with Error(lang, err); an error without a
// code keeps its caller's fallback. An argument of a coded error is worded
// in the same language when it is itself a coded error, a Keyed word the
// catalogue has (a task state) or Choices (alternatives, joined as the
// language joins a list). tasks/schedule's ParseError and tasks' UserError
// are examples: codes "schedule.*" and "tasks.*" in zh.go.
// TestEveryKeyHasEveryLanguage fails until every language words the code
// with the same arguments.
//
// A new key is one line in every language's Text; TestEveryKeyHasEveryLanguage
// checks that each language has it with the same arguments, and
// TestEveryKeyUsedIsWorded that every key the conversation's code names
// exists. A new language is one file holding one Catalog (its Text, Errors
// and Words), named in catalogs below.
package text

import (
	"errors"
	"fmt"
	"strings"
)

// Catalog is one language: its wording and its words.
type Catalog struct {
	Lang string            // "en", "zh"
	Text map[string]string // key → wording (a fmt format when it takes arguments)
	// Errors words domain packages' coded errors: code → wording. English
	// leaves them to the domain's own messages.
	Errors map[string]string
	Words  Words
}

// Words are what people type in a language that herald reads as
// commands, clause keywords and answers. Each value is matched as typed
// (lower-cased first for scripts with case).
type Words struct {
	Commands map[string]string // command word → command name ("start" → "help")
	Clauses  map[string]string // /watch clause word → clause ("kind" → "as")
	// ScheduleOpeners start a schedule clause without a keyword (Chinese
	// "every").
	ScheduleOpeners []string
	Yes             []string          // agreeing: to a proposed default, or to send a draft
	Default         []string          // asking for the default (a yes, but not to a draft)
	No              []string          // declining a draft
	All             []string          // /read all
	Off             []string          // /mute … off, /quiet off
	Token           []string          // /inbox token
	TokenOff        []string          // /token <site> off
	Page            []string          // /history … page N
	PageAround      [][2]string       // /history … <before>N<after>, one token
	RangeDashes     []string          // between the two times of /quiet
	Languages       map[string]string // a language's name → its code, for /lang
	// Secrets are words that name a secret ("password"), whose value the
	// conversation memory never keeps. English's are patterns in
	// conversation/memory.
	Secrets []string
}

// catalogs are the languages herald speaks; the first is the fallback.
var catalogs = []*Catalog{&English, &Chinese}

// Catalogs returns every language's catalogue, the fallback first.
func Catalogs() []*Catalog { return catalogs }

// Of returns the catalogue of lang, English when herald does not speak it.
func Of(lang string) *Catalog {
	for _, c := range catalogs {
		if c.Lang == lang {
			return c
		}
	}
	return catalogs[0]
}

// Format is key's wording in lang with args filled in. A key no
// catalogue has comes back as itself, which the catalogue test prevents.
func Format(lang, key string, args ...any) string { return Of(lang).Format(key, args...) }

// Format is key's wording with args filled in; without args the wording
// is returned as written (it may be a format the caller fills).
func (c *Catalog) Format(key string, args ...any) string {
	s, ok := c.Text[key]
	if !ok {
		s, ok = catalogs[0].Text[key]
	}
	if !ok {
		return key
	}
	return c.fill(s, args)
}

// fill formats s with args, each Localized one and each coded error in
// c's language (so a domain error may carry another as an argument).
func (c *Catalog) fill(s string, args []any) string {
	if len(args) == 0 {
		return s
	}
	filled := make([]any, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case Localized:
			a = x(c.Lang)
		case Coded:
			a = c.coded(x)
		case Keyed:
			if w := c.Format(x.TextKey()); w != x.TextKey() {
				a = w
			}
		case Choices:
			a = c.choices(x.Choices())
		}
		filled[i] = a
	}
	return fmt.Sprintf(s, filled...)
}

// Has reports whether the catalogue words key.
func (c *Catalog) Has(key string) bool { _, ok := c.Text[key]; return ok }

// Coded is a domain error that the catalogue can word: a stable code,
// "<package>.<code>", the arguments its wording takes, and its plain
// English message.
type Coded interface {
	error
	Coded() (code string, args []any, english string)
}

// Error words a coded error in lang: the catalogue's wording of its code,
// else its own English message. ok is false when err carries no code (the
// caller then words it itself).
func Error(lang string, err error) (msg string, ok bool) {
	var ce Coded
	if !errors.As(err, &ce) {
		return "", false
	}
	return Of(lang).coded(ce), true
}

// coded words a coded error: the catalogue's wording of its code, else its
// own English message.
func (c *Catalog) coded(e Coded) string {
	code, args, english := e.Coded()
	if s, ok := c.Errors[code]; ok {
		return c.fill(s, args)
	}
	return english
}

// Keyed is an argument a domain error carries that the catalogue words by
// one of its keys: a task state is "state.paused" in every language. Its
// own formatting (String) is its English, which the domain's English
// message already holds; a key no catalogue has leaves it as it is.
type Keyed interface{ TextKey() string }

// Choices is an argument listing alternatives ("rss, ical or html"),
// joined the way each language joins a list: list.sep between them,
// list.or before the last.
type Choices interface{ Choices() []string }

// choices joins list as c joins alternatives.
func (c *Catalog) choices(list []string) string {
	var b strings.Builder
	for i, s := range list {
		switch {
		case i == 0:
		case i == len(list)-1:
			b.WriteString(c.Format("list.or"))
		default:
			b.WriteString(c.Format("list.sep"))
		}
		b.WriteString(s)
	}
	return b.String()
}

// Localized is an argument worded per language: a domain error's message
// in each language, or a list joined the way each language joins lists.
// Format calls it with the catalogue's language.
type Localized func(lang string) string
