package conversation

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
)

// TestParseErrorsInChineseAreChineseOnly: the catalogue words every
// schedule.ParseError in Chinese, and the Chinese message carries no
// English words.
func TestParseErrorsInChineseAreChineseOnly(t *testing.T) {
	for _, in := range []string{"每周 08:00", "每周一", "每天", "每周一 25:00", "weekly 08:00", "weekly xyz 08:00", "每 一", "daily 08:00 CST", "fortnightly"} {
		_, err := schedule.Parse(in, time.UTC)
		var pe *schedule.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a ParseError", in, err)
			continue
		}
		zh := scheduleProblem(err)("zh")
		for _, w := range strings.FieldsFunc(zh, func(r rune) bool { return !unicode.IsLetter(r) || r > unicode.MaxASCII }) {
			if len(w) > 1 && !strings.Contains(in+text.Chinese.Errors["schedule.invalid"]+" IANA Asia Shanghai weekly daily every at cron mon tue wed thu fri sat sun", w) {
				t.Errorf("Parse(%q): the Chinese message has the English word %q: %s", in, w, zh)
			}
		}
		if !strings.ContainsFunc(zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("Parse(%q): %q is not Chinese", in, zh)
		}
	}
}

// TestCodedErrorsAreWordedInTheTurnsLanguage: a domain error with a code
// reaches a person in the turn's language, from the catalogue; in English
// it is the domain's own message.
func TestCodedErrorsAreWordedInTheTurnsLanguage(t *testing.T) {
	_, perr := schedule.Parse("every 10s", time.UTC)
	err := fmt.Errorf("submit: %w", perr)
	zh := (&turn{lang: "zh"}).errText(err)
	if zh != text.Chinese.Errors["schedule.too_short"] {
		t.Errorf("zh: %q", zh)
	}
	if en := (&turn{lang: "en"}).errText(err); en != "The interval must be at least 1m." {
		t.Errorf("en: %q", en)
	}
}

// TestStatesAreWordedAsTheManagerWordsThem: a task state reads the same
// in a reply and inside the manager's refusals: the catalogue words the
// key the manager gives a state (its English the manager's own), in every
// language.
func TestStatesAreWordedAsTheManagerWordsThem(t *testing.T) {
	for _, s := range []tasks.State{tasks.PendingApproval, tasks.Active, tasks.Paused, tasks.Errored, tasks.Done, tasks.Rejected, tasks.Deleted} {
		w := tasks.StateText(s)
		if got := (&turn{lang: "en"}).state(s); got != w.En {
			t.Errorf("en %s: %q, want %q", s, got, w.En)
		}
		for _, c := range text.Catalogs() {
			if !c.Has(w.Key) {
				t.Errorf("%s does not word %s (%q)", c.Lang, s, w.Key)
			}
			if got, want := (&turn{lang: c.Lang}).state(s), c.Format(w.Key); got != want {
				t.Errorf("%s %s: %q, want %q", c.Lang, s, got, want)
			}
		}
	}
}

var _ text.Coded = (*tasks.UserError)(nil)

// TestEveryTaskErrorIsWorded: every code the manager's refusals carry is
// worded in every language but English (whose wording is the manager's
// own), and no catalogue words a code the manager no longer makes.
func TestEveryTaskErrorIsWorded(t *testing.T) {
	codes := map[string]bool{}
	for _, code := range tasks.ErrorCodes() {
		codes["tasks."+code] = true
	}
	if len(codes) < 30 {
		t.Fatalf("the manager lists %d codes", len(codes))
	}
	for _, c := range text.Catalogs() {
		for code := range codes {
			if _, ok := c.Errors[code]; !ok && c != &text.English {
				t.Errorf("%s does not word %s", c.Lang, code)
			}
		}
		for code := range c.Errors {
			if strings.HasPrefix(code, "tasks.") && !codes[code] {
				t.Errorf("%s words %s, which the manager no longer makes", c.Lang, code)
			}
		}
	}
}

// TestTheManagersRefusalsReadInTheTurnsLanguage: a refusal of the
// manager's reaches a person as the catalogue words it, Chinese as written
// (an address at its start is not capitalised), English made a sentence.
func TestTheManagersRefusalsReadInTheTurnsLanguage(t *testing.T) {
	ue := &tasks.UserError{Kind: tasks.ErrScope, Code: "outside_approval", Args: []any{"example.edu", "example.edu", "/feeds/"},
		Msg: "the URL on example.edu is outside what was approved (example.edu/feeds/); it needs a new approval"}
	err := fmt.Errorf("resume: %w", ue)
	if got, want := (&turn{lang: "zh"}).errText(err), "example.edu 上的网址超出了已批准的范围（example.edu/feeds/）；需要重新批准。"; got != want {
		t.Errorf("zh: %q, want %q", got, want)
	}
	if got, want := (&turn{lang: "en"}).errText(err), "The URL on example.edu is outside what was approved (example.edu/feeds/); it needs a new approval."; got != want {
		t.Errorf("en: %q, want %q", got, want)
	}
}
