package render

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

func TestMarkdown_LinksOnlyWhatCanStandInALink(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: "News", Items: []delivery.Item{
		{ID: "1", Title: "Exam", URL: "https://a.example/1", Change: delivery.ChangeNew},
		{ID: "2", Title: "Lab [B]", URL: "https://a.example/2", Change: delivery.ChangeNew},
		{ID: "3", Title: "Talk", URL: "https://a.example/x_(y)", Change: delivery.ChangeNew},
	}}
	got := Markdown(m, LangEN, time.UTC, time.Time{}, MarkdownStyle{Limit: 4096, Break: "\n"})
	want := "**3 changes in News**\n\n- [new] [Exam](https://a.example/1)\n- [new] Lab [B] https://a.example/2\n- [new] Talk https://a.example/x_(y)"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestMarkdown_SplitsByBytesBetweenCharacters: at any limit every part
// fits, is valid UTF-8 (invalid input bytes become U+FFFD), and the
// parts together hold the whole text.
func TestMarkdown_SplitsByBytesBetweenCharacters(t *testing.T) {
	text := strings.Repeat("会议通知 a\xff😀", 300)
	clean := strings.ToValidUTF8(text, "\uFFFD")
	m := delivery.Message{Kind: delivery.KindInbound, Title: "T", Text: text}
	for _, limit := range []int{4, 5, 7, 64, 1000, 4096} {
		parts := Markdown(m, LangEN, time.UTC, time.Time{}, MarkdownStyle{Limit: limit, Break: "\n"})
		joined := ""
		for i, p := range parts {
			if len(p) > limit || !utf8.ValidString(p) {
				t.Fatalf("limit %d: part %d is %d bytes, valid %v", limit, i, len(p), utf8.ValidString(p))
			}
			joined += p
		}
		if !strings.HasSuffix(joined, clean) && !strings.Contains(strings.ReplaceAll(joined, "\n", ""), clean) {
			t.Errorf("limit %d: the parts lost text", limit)
		}
	}
}

// FuzzMarkdownSplit: whatever the text and limit, every part fits the
// limit in bytes and is valid UTF-8.
func FuzzMarkdownSplit(f *testing.F) {
	f.Add("会议通知\n明天 9 点", "标题", 8)
	f.Add("a\xff\xfeb", "", 4)
	f.Fuzz(func(t *testing.T, text, title string, limit int) {
		if limit < 4 || limit > 1<<14 {
			return
		}
		m := delivery.Message{Kind: delivery.KindInbound, Title: title, Text: text,
			Items: []delivery.Item{{ID: "1", Title: title, URL: "https://a.example/" + title, Change: delivery.ChangeNew}}}
		for _, br := range []string{"\n", "  \n"} {
			for i, p := range Markdown(m, LangZH, time.UTC, time.Time{}, MarkdownStyle{Limit: limit, Break: br}) {
				if len(p) > limit || !utf8.ValidString(p) {
					t.Fatalf("limit %d: part %d is %d bytes, valid %v", limit, i, len(p), utf8.ValidString(p))
				}
			}
		}
	})
}
