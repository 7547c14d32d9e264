package conversation

import (
	"strings"

	"github.com/herald-bridge/herald/conversation/text"
)

// CJK punctuation the parser reads, by name (written as escapes).
const (
	ideographicSpace     = '\u3000'
	ideographicComma     = "\u3001"
	ideographicFullStop  = "\u3002"
	waveDash             = "\u301c"
	fullwidthExclamation = "\uff01"
	fullwidthComma       = "\uff0c"
	fullwidthSemicolon   = "\uff1b"
)

// answerEnds are trimmed off a short answer ("ok.", "yes!").
const answerEnds = " .!" + ideographicFullStop + fullwidthExclamation

// The words people type that herald reads, from every language's
// catalogue (text.Words).
var (
	wordsYes      = func(w text.Words) []string { return w.Yes }
	wordsDefault  = func(w text.Words) []string { return w.Default }
	wordsNo       = func(w text.Words) []string { return w.No }
	wordsAll      = func(w text.Words) []string { return w.All }
	wordsOff      = func(w text.Words) []string { return w.Off }
	wordsToken    = func(w text.Words) []string { return w.Token }
	wordsTokenOff = func(w text.Words) []string { return w.TokenOff }
	wordsPage     = func(w text.Words) []string { return w.Page }

	// rangeDashes stand between the two times of /quiet.
	rangeDashes = append([]string{"–", "—", "~", waveDash}, words(func(w text.Words) []string { return w.RangeDashes })...)
)

// words gathers the words pick chooses from every language.
func words(pick func(text.Words) []string) []string {
	var out []string
	for _, c := range text.Catalogs() {
		out = append(out, pick(c.Words)...)
	}
	return out
}

// isWord reports whether w, ignoring case, is one of the words pick chooses
// in any language.
func isWord(w string, pick func(text.Words) []string) bool {
	for _, x := range words(pick) {
		if strings.EqualFold(w, x) {
			return true
		}
	}
	return false
}

// languageNamed is the code of the language named w (/lang english), ""
// when none.
func languageNamed(w string) string {
	for _, c := range text.Catalogs() {
		if code, ok := c.Words.Languages[strings.ToLower(w)]; ok {
			return code
		}
	}
	return ""
}
