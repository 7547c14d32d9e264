package text

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// verbs are the fmt verbs of a wording, in the order of their arguments.
var reVerb = regexp.MustCompile(`%(?:\[(\d+)\])?[-+# 0-9.]*([a-zA-Z%])`)

func verbs(s string) []string {
	var out []string
	next := 1
	for _, m := range reVerb.FindAllStringSubmatch(s, -1) {
		if m[2] == "%" {
			continue
		}
		n := next
		if m[1] != "" {
			fmt.Sscan(m[1], &n)
		}
		next = n + 1
		for len(out) < n {
			out = append(out, "")
		}
		v := m[2]
		if v == "q" || v == "s" || v == "v" {
			v = "s" // any of them fits a string
		}
		out[n-1] = v
	}
	return out
}

// TestEveryKeyHasEveryLanguage: each language words every key, with the
// same arguments, so that a reply never falls back to another language.
func TestEveryKeyHasEveryLanguage(t *testing.T) {
	keys := map[string]bool{}
	for _, c := range Catalogs() {
		for k := range c.Text {
			keys[k] = true
		}
	}
	for _, c := range Catalogs() {
		for k := range keys {
			s, ok := c.Text[k]
			if !ok {
				t.Errorf("%s lacks %q", c.Lang, k)
				continue
			}
			if want, got := verbs(English.Text[k]), verbs(s); !slices.Equal(want, got) {
				t.Errorf("%s %q takes %v, English takes %v", c.Lang, k, got, want)
			}
		}
		// Coded errors: every language but English words every code
		// with the same arguments (English may leave a code to the
		// domain's own message).
		for _, o := range Catalogs() {
			for code, w := range o.Errors {
				s, ok := c.Errors[code]
				if !ok && c != &English {
					t.Errorf("%s lacks the coded error %q", c.Lang, code)
					continue
				}
				if ok && !slices.Equal(verbs(w), verbs(s)) {
					t.Errorf("%s %q takes %v, %s takes %v", c.Lang, code, verbs(s), o.Lang, verbs(w))
				}
			}
		}
		if len(c.Words.Commands) == 0 {
			t.Errorf("%s has no command words", c.Lang)
		}
	}
}

// reKey finds the keys the conversation asks for by literal.
var reKey = regexp.MustCompile(`\b(?:tr|reply|usageErr\([^,]+,[^,]+,|Format\(\w+,)\s*\(?"([a-z_]+\.[a-z0-9_.]+)"`)

// TestEveryKeyUsedIsWorded: a key written in the conversation's code is in
// the catalogue (a typo would otherwise show the key itself).
func TestEveryKeyUsedIsWorded(t *testing.T) {
	files, _ := filepath.Glob("../*.go")
	if len(files) == 0 {
		t.Fatal("no conversation sources found")
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range reKey.FindAllStringSubmatch(string(b), -1) {
			n++
			if !English.Has(m[1]) {
				t.Errorf("%s asks for %q, which no catalogue words", filepath.Base(f), m[1])
			}
		}
	}
	if n < 100 {
		t.Errorf("found only %d keys in use; the pattern no longer matches the code", n)
	}
}

func TestFormatFillsLocalizedArguments(t *testing.T) {
	list := Localized(func(lang string) string { return Format(lang, "list.or") })
	if got := Format("zh", "args.which_kind", list); got != "请指定类型： 或 。" {
		t.Errorf("zh: %q", got)
	}
	if got := Format("fr", "turn.cancelled"); got != English.Text["turn.cancelled"] {
		t.Errorf("an unknown language falls back to English, got %q", got)
	}
}

// codedErr is a domain error with a code.
type codedErr struct{}

func (codedErr) Error() string { return "invalid schedule: the interval must be at least 1m" }
func (codedErr) Coded() (string, []any, string) {
	return "schedule.too_short", nil, "the interval must be at least 1m"
}

func TestErrorWordsACodedErrorOrFallsBackToItsEnglish(t *testing.T) {
	err := fmt.Errorf("submit: %w", codedErr{})
	if got, ok := Error("zh", err); !ok || got != Chinese.Errors["schedule.too_short"] {
		t.Errorf("zh: %q %v", got, ok)
	}
	if got, ok := Error("en", err); !ok || got != "the interval must be at least 1m" {
		t.Errorf("en: %q %v", got, ok)
	}
	if _, ok := Error("zh", fmt.Errorf("plain")); ok {
		t.Error("an error without a code was worded")
	}
}

func TestACodedErrorArgumentIsWordedInTheSameLanguage(t *testing.T) {
	got := Chinese.fill("%s", []any{codedErr{}})
	if got != Chinese.Errors["schedule.too_short"] {
		t.Errorf("got %q", got)
	}
}

// stateWord is a Keyed argument: a word the catalogue has.
type stateWord string

func (s stateWord) String() string  { return string(s) }
func (s stateWord) TextKey() string { return "state." + string(s) }

// kinds is a Choices argument.
type kinds []string

func (k kinds) Choices() []string { return k }

// stateErr is a coded error whose arguments are a Keyed word and Choices.
type stateErr struct{}

func (stateErr) Error() string { return "task t-1 is paused; use rss or ical" }
func (stateErr) Coded() (string, []any, string) {
	return "x.state", []any{stateWord("paused"), kinds{"rss", "ical", "html"}}, "task t-1 is paused; use rss, ical or html"
}

func TestACodedErrorsKeyedAndChoicesArgumentsAreWordedInItsLanguage(t *testing.T) {
	zh := &Catalog{Lang: "zh", Text: Chinese.Text, Errors: map[string]string{"x.state": "任务 t-1 当前为“%s”；请用 %s。"}}
	if got, want := zh.coded(stateErr{}), "任务 t-1 当前为“已暂停”；请用 rss、ical 或 html。"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := zh.fill("%s", []any{stateWord("no_such_state")}); got != "no_such_state" {
		t.Errorf("a word no catalogue has: %q, want it as it is", got)
	}
	if got := English.fill("%s", []any{kinds{"rss"}}); got != "rss" {
		t.Errorf("one choice: %q", got)
	}
}
