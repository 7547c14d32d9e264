package render

import (
	"reflect"
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
