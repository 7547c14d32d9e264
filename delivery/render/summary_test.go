package render

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
)

// at0 is when the notices of these tests are rendered.
var at0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// contentMessage is a page change with a summary and changed lines.
func contentMessage() delivery.Message {
	return delivery.Message{Kind: delivery.KindChanged, TaskID: "t-2ff65d", TaskName: "教务处通知", OccurredAt: at0,
		Items: []delivery.Item{{ID: "n1", Title: "期末考试安排通知", URL: "https://jwc.example.edu/n/1", Change: delivery.ChangeChanged,
			Summary: "期末考试改至 1 月 8 日（周五）上午 9:00，地点 204 教室。请携带学生证。",
			Diff:    &delivery.ItemDiff{Added: []string{"地点：204 教室", "请携带学生证"}, Removed: []string{"地点：101 教室"}}}}}
}

// Every layout shows an item's summary and changed lines under its
// title, in each language.
func TestRender_SummaryAndChangedLinesUnderTheTitle(t *testing.T) {
	m := contentMessage()
	want := []string{"期末考试安排通知", "期末考试改至 1 月 8 日", "+ 地点：204 教室", "+ 请携带学生证", "- 地点：101 教室"}
	card, err := FeishuCard(m, LangZH, time.UTC, at0)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"text en":  Text(m, LangEN, time.UTC, at0),
		"text zh":  Text(m, LangZH, time.UTC, at0),
		"telegram": strings.Join(TelegramHTML(m, LangZH, time.UTC, at0), "\n"),
		"feishu":   string(card),
	}
	md := strings.Join(Markdown(m, LangZH, time.UTC, at0, MarkdownStyle{Limit: 4096, Break: "\n"}), "\n")
	for _, w := range []string{"  期末考试改至 1 月 8 日", "  ＋ 地点：204 教室", "  － 地点：101 教室"} {
		if !strings.Contains(md, w) { // a sign at a line's start would read as a list item
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	for name, out := range outputs {
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", name, w, out)
			}
		}
		if strings.Contains(out, "t-2ff65d") {
			t.Errorf("%s names the task by its id:\n%s", name, out)
		}
	}
	if got, want := Text(m, LangZH, time.UTC, at0), "教务处通知 有 1 项更新\n\n• [更新] 期末考试安排通知\n"+
		"  期末考试改至 1 月 8 日（周五）上午 9:00，地点 204 教室。请携带学生证。\n"+
		"  + 地点：204 教室\n  + 请携带学生证\n  - 地点：101 教室\n  https://jwc.example.edu/n/1\n"; got != want {
		t.Errorf("zh text:\n%s\nwant:\n%s", got, want)
	}
}

// A notice shows at most MaxDiffLines changed lines each way.
func TestRender_ChangedLinesBounded(t *testing.T) {
	m := contentMessage()
	var many []string
	for i := range 20 {
		many = append(many, strings.Repeat("x", i+1))
	}
	m.Items[0].Diff = &delivery.ItemDiff{Added: many, Removed: many}
	out := Text(m, LangEN, time.UTC, at0)
	if n := strings.Count(out, "\n  + "); n != MaxDiffLines {
		t.Errorf("%d added lines shown, want %d", n, MaxDiffLines)
	}
	if n := strings.Count(out, "\n  - "); n != MaxDiffLines {
		t.Errorf("%d removed lines shown, want %d", n, MaxDiffLines)
	}
}

// A templated notice's first line is its headline, the rest its text.
func TestRender_TemplateBodyIsTheNotice(t *testing.T) {
	m := contentMessage()
	m.Body = "教务处通知: 1 update\n- 期末考试安排通知"
	if got := Text(m, LangEN, time.UTC, at0); got != "教务处通知: 1 update\n\n- 期末考试安排通知\n" {
		t.Errorf("text %q", got)
	}
	if got := Title(m, LangEN, at0); got != "教务处通知: 1 update" {
		t.Errorf("title %q", got)
	}
}
