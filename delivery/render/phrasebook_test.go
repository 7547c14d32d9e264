package render

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/herald-bridge/herald/delivery"
)

// TestEveryPhraseHasEveryLanguage: each language's phrasebook fills every
// phrase and names every kind of change, so no notice part is left empty
// or falls back to another language.
func TestEveryPhraseHasEveryLanguage(t *testing.T) {
	for lang, w := range phrasebooks {
		v := reflect.ValueOf(*w)
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				t.Errorf("%s phrasebook lacks %s", lang, v.Type().Field(i).Name)
			}
		}
		for _, c := range []string{delivery.ChangeNew, delivery.ChangeChanged, delivery.ChangeRemoved, delivery.ChangeDeadline} {
			if w.change[c] == "" {
				t.Errorf("%s phrasebook does not name change %q", lang, c)
			}
		}
	}
	if title, text := InboxFull(LangZH, 3); title == "" || text == "" || title == en.inboxFullTitle {
		t.Errorf("Chinese inbox-full notice: %q / %q", title, text)
	}
}

// TestEveryOwnerNoticeHasEveryLanguage: each phrasebook words every owner
// notice, title and text, with the arguments English takes, so a notice
// neither falls back to another language nor drops what it reports.
func TestEveryOwnerNoticeHasEveryLanguage(t *testing.T) {
	verbs := regexp.MustCompile(`%\[\d+\][a-z]`)
	for lang, w := range phrasebooks {
		if len(w.notices) != len(Notices) {
			t.Errorf("%s words %d notices, want %d", lang, len(w.notices), len(Notices))
		}
		for _, name := range Notices {
			title, format := OwnerNotice(lang, name)
			if title == "" || format == "" {
				t.Errorf("%s lacks the notice %s", lang, name)
				continue
			}
			_, enFormat := OwnerNotice(LangEN, name)
			got, want := verbs.FindAllString(format, -1), verbs.FindAllString(enFormat, -1)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s notice %s takes %v, English takes %v", lang, name, got, want)
			}
		}
	}
	if title, _ := OwnerNotice("fr", NoticeFailing); title != en.notices[NoticeFailing].title {
		t.Errorf("a language without a phrasebook got %q, want English", title)
	}
	if !Speaks(LangEN) || !Speaks(LangZH) || Speaks("fr") || Speaks("") {
		t.Error("Speaks does not follow the phrasebooks")
	}
}

// TestOneIsSingularInEnglish: an inbox keeping one item says so, and the
// notices with a count word one apart in English only.
func TestOneIsSingularInEnglish(t *testing.T) {
	if _, text := InboxFull(LangEN, 1); !strings.Contains(text, "keeps 1 item.") {
		t.Errorf("inbox of one: %q", text)
	}
	if _, text := InboxFull(LangEN, 2); !strings.Contains(text, "keeps 2 items.") {
		t.Errorf("inbox of two: %q", text)
	}
	if _, text := FormatNotice(LangEN, NoticeBaseline, "Feed", 1); !strings.Contains(text, "Feed: 1 item.") {
		t.Errorf("baseline of one: %q", text)
	}
	if _, text := FormatNotice(LangEN, NoticeBaseline, "Feed", 11); !strings.Contains(text, "Feed: 11 items.") {
		t.Errorf("baseline of eleven: %q", text)
	}
	_, zhOne := FormatNotice(LangZH, NoticeBaseline, "Feed", 1)
	_, zhFmt := OwnerNotice(LangZH, NoticeBaseline)
	if zhOne != fmt.Sprintf(zhFmt, "Feed", 1) {
		t.Errorf("Chinese has no plural, got %q", zhOne)
	}
}
