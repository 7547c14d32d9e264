package memory

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzQueryFindsItsOwnText: whatever a person typed, searching for that
// very text finds it — every query term is among the text's index terms
// and the phrase check accepts it — and no term is empty or spaced.
func FuzzQueryFindsItsOwnText(f *testing.F) {
	for _, s := range []string{"期末考试通知", "Exam notice", `"exam notice" 考试`, "ＣＳ１０１作业", "a", "考", "「考试 通知」", "x\u0301y", "k8s 集群"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 400 || !utf8.ValidString(s) {
			return
		}
		terms := Terms(s)
		for _, term := range terms {
			if term == "" || strings.ContainsAny(term, " \t\n") || len(term) > maxTermBytes {
				t.Fatalf("bad term %q of %q", term, s)
			}
		}
		q := ParseQuery(s)
		if q.Empty() {
			return
		}
		for _, term := range q.Terms {
			if !slices.Contains(terms, term) {
				t.Fatalf("query term %q of %q is not indexed (%q)", term, s, terms)
			}
		}
		if !q.Match(s) {
			t.Fatalf("%q does not match itself (%+v)", s, q)
		}
		_ = Redact(s)
	})
}
