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

// TestStatesAreWordedAsTheManagerWordsThem: the catalogue names every
// task state the way the manager's own StateText does, in both languages.
func TestStatesAreWordedAsTheManagerWordsThem(t *testing.T) {
	for _, s := range []tasks.State{tasks.PendingApproval, tasks.Active, tasks.Paused, tasks.Errored, tasks.Done, tasks.Rejected, tasks.Deleted} {
		w := tasks.StateText(s)
		if got := (&turn{lang: "en"}).state(s); got != w.En {
			t.Errorf("en %s: %q, want %q", s, got, w.En)
		}
		if got := (&turn{lang: "zh"}).state(s); got != w.Zh {
			t.Errorf("zh %s: %q, want %q", s, got, w.Zh)
		}
	}
}
