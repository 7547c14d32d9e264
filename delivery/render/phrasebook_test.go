package render

import (
	"reflect"
	"regexp"
	"slices"
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
