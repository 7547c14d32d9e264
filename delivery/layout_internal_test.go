package delivery

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// An item that is new to the recipient and then changed while held is
// told as new, without changed lines against a version they never saw.
func TestFold_NewThenChangedDropsTheDiff(t *testing.T) {
	got, keep := fold(Item{ID: "a", Change: ChangeNew, Title: "A"},
		Item{ID: "a", Change: ChangeChanged, Title: "A2", Summary: "s", Diff: &ItemDiff{Added: []string{"x"}}})
	if !keep || got.Change != ChangeNew || got.Diff != nil || got.Summary != "s" {
		t.Fatalf("folded %+v", got)
	}
}

// A template's output is bounded, cut between characters.
func TestLay_OutputBounded(t *testing.T) {
	m := Message{Kind: KindChanged, TaskName: "任务", Items: []Item{{Title: strings.Repeat("长", 5000)}}}
	out, err := Lay(`{{range .items}}{{.title}}{{.title}}{{end}}`, m, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > MaxTemplateOutput+len("…") || !utf8.ValidString(out) || !strings.HasSuffix(out, "…") {
		t.Fatalf("%d bytes, valid %v", len(out), utf8.ValidString(out))
	}
}

// Only the documented functions are there: call is refused, an unknown
// function does not parse.
func TestParseTemplate_FixedFunctions(t *testing.T) {
	for _, src := range []string{`{{env "HOME"}}`, `{{readFile "/etc/passwd"}}`} {
		if _, err := ParseTemplate(src); err == nil {
			t.Errorf("%s parsed", src)
		}
	}
	if _, err := Lay(`{{call .task}}`, Message{Kind: KindChanged, TaskName: "x"}, time.UTC); err == nil {
		t.Error("call ran")
	}
	out, err := Lay(`{{.task | lower}} {{.missing | default "none"}} {{date "2006-01-02" .occurred_at}} {{range .items}}{{.due | date "15:04" | default "-"}}{{end}}`,
		Message{Kind: KindChanged, TaskName: "News", OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Items: []Item{{Title: "a"}}}, time.UTC)
	if err != nil || out != "news none 2026-12-01 -" {
		t.Errorf("out %q, %v", out, err)
	}
}

// A task state notice keeps herald's wording whatever the templates.
func TestPresent_OnlyChangeNoticesAndReminders(t *testing.T) {
	m := Message{Kind: KindState, Title: "Watching", Text: "Now watching", Template: "{{.task}}"}
	got, err := Present(m, Route{Template: "{{.task}}!"})
	if err != nil || got.Body != "" {
		t.Errorf("state notice laid out: %q, %v", got.Body, err)
	}
}

// A template cannot run long without writing: no range over a number,
// ranges at most two deep; the refusal names the template's line.
func TestParseTemplate_BoundedRanges(t *testing.T) {
	for src, want := range map[string]string{
		"x\n{{range 1000000000}}{{end}}":                                          "notice:2: a range goes over items or lines, not a number",
		"{{range .items}}{{range $.items}}{{range $.items}}{{end}}{{end}}{{end}}": "notice:1: ranges nest at most 2 deep",
		"{{define \"x\"}}\n\n{{range 5}}{{end}}{{end}}":                           "notice:3: a range goes over items or lines, not a number",
	} {
		if _, err := ParseTemplate(src); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	if _, err := ParseTemplate(`{{range .items}}{{range .diff.added}}+{{.}}{{end}}{{end}}`); err != nil {
		t.Errorf("items and their lines: %v", err)
	}
}
