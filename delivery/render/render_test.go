package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-bridge/herald/delivery"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var now = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

func shanghai(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skipf("no zone database: %v", err)
	}
	return loc
}

func changed() delivery.Message {
	return delivery.Message{
		Kind:     delivery.KindChanged,
		TaskID:   "t1",
		TaskName: "Campus news",
		Items: []delivery.Item{
			{ID: "a", Title: "Library opens late", URL: "https://news.example.edu/a?x=1&y=2", Change: delivery.ChangeNew},
			{ID: "b", Title: "Exam <rooms> & \"times\"", URL: "https://news.example.edu/b", Change: delivery.ChangeChanged},
			{ID: "c", Title: "Old notice", Change: delivery.ChangeRemoved},
		},
		OccurredAt: now,
	}
}

func deadline() delivery.Message {
	return delivery.Message{
		Kind:     delivery.KindDeadline,
		TaskName: "Course calendar",
		Items: []delivery.Item{
			{ID: "e2", Title: "Essay 2", URL: "https://lms.example.edu/e2", Change: delivery.ChangeDeadline, Due: now.Add(23*time.Hour + 10*time.Minute)},
		},
	}
}

// was lists changed items that say what they were before: retitled
// (with markup to escape), due moved, due dropped, and a previous title
// long enough to be cut.
func was() delivery.Message {
	from := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	return delivery.Message{
		Kind:     delivery.KindChanged,
		TaskName: "Exams",
		Items: []delivery.Item{
			{ID: "x1", Title: "Exam — Room <204>", URL: "https://exams.example.edu/x1", Change: delivery.ChangeChanged, WasTitle: "Exam — Room <101> & co"},
			{ID: "x2", Title: "Essay 3", Change: delivery.ChangeChanged, Due: from.Add(48 * time.Hour), WasDue: from},
			{ID: "x3", Title: "Quiz", Change: delivery.ChangeChanged, WasDue: from},
			{ID: "x4", Title: "Notice", Change: delivery.ChangeChanged, WasTitle: strings.Repeat("long ", 60)},
		},
		OccurredAt: now,
	}
}

func many(n int) delivery.Message {
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: "Feed"}
	for i := range n {
		m.Items = append(m.Items, delivery.Item{ID: fmt.Sprint(i), Title: fmt.Sprintf("Item %d", i), URL: fmt.Sprintf("https://example.com/%d", i), Change: delivery.ChangeNew})
	}
	return m
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	sh := shanghai(t)
	cases := []struct {
		name string
		m    delivery.Message
		lang string
		zone *time.Location
	}{
		{"changed_en", changed(), "en", time.UTC},
		{"changed_zh", changed(), "zh", sh},
		{"deadline_en", deadline(), "en", time.UTC},
		{"deadline_zh", deadline(), "zh", sh},
		{"many_en", many(25), "en", nil},
		{"many_zh", many(25), "zh", sh},
		{"text_en", delivery.Message{Kind: delivery.KindInbound, Title: "Build <failed> & more", Text: "line one\nline two"}, "en", nil},
		{"was_en", was(), "en", time.UTC},
		{"was_zh", was(), "zh", sh},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name+".txt", []byte(Text(c.m, c.lang, c.zone, now)))
			golden(t, c.name+".tg.html", []byte(strings.Join(TelegramHTML(c.m, c.lang, c.zone, now), "\n-----\n")))
			b, err := FeishuCard(c.m, c.lang, c.zone, now)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, b, "", "  "); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".card.json", pretty.Bytes())
		})
	}
}

func TestTitles(t *testing.T) {
	cases := []struct {
		m    delivery.Message
		lang string
		want string
	}{
		{changed(), "en", "3 changes in Campus news"},
		{changed(), "zh", "Campus news 有 3 项更新"},
		{delivery.Message{Kind: delivery.KindChanged, TaskName: "校园新闻", Items: changed().Items}, "zh", "校园新闻 有 3 项更新"},
		{delivery.Message{Kind: delivery.KindChanged, TaskName: "News", Items: changed().Items[:1]}, "en", "1 change in News"},
		{delivery.Message{Kind: delivery.KindChanged, TaskName: "News", Items: changed().Items[:1], More: 4}, "en", "5 changes in News"},
		{deadline(), "en", "Due in 23 h: Essay 2"},
		{deadline(), "zh", "23 小时后截止：Essay 2"},
		{delivery.Message{Kind: delivery.KindDeadline, Items: []delivery.Item{{Title: "Quiz", Due: now.Add(40 * time.Minute)}}}, "en", "Due in 40 min: Quiz"},
		{delivery.Message{Kind: delivery.KindDeadline, Items: []delivery.Item{{Title: "Quiz", Due: now.Add(72 * time.Hour)}}}, "en", "Due in 3 d: Quiz"},
		{delivery.Message{Kind: delivery.KindDeadline, Items: []delivery.Item{{Title: "Quiz", Due: now.Add(-time.Hour)}}}, "en", "Overdue: Quiz"},
		{delivery.Message{Kind: delivery.KindTest, Title: "Hello"}, "en", "Hello"},
		{delivery.Message{Kind: delivery.KindTest}, "zh", "通知"},
	}
	for _, c := range cases {
		if got := Title(c.m, c.lang, now); got != c.want {
			t.Errorf("Title(%s, %s) = %q, want %q", c.m.Kind, c.lang, got, c.want)
		}
	}
}

func TestTelegramHTMLEscapes(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: "<b>A&B</b>", Items: []delivery.Item{
		{Title: `x < y & "z" > w`, URL: `https://e.com/?a=1&b="2"`, Change: delivery.ChangeNew},
	}}
	got := strings.Join(TelegramHTML(m, "en", nil, now), "")
	for _, want := range []string{
		"<b>1 change in &lt;b&gt;A&amp;B&lt;/b&gt;</b>",
		`<a href="https://e.com/?a=1&amp;b=&quot;2&quot;">x &lt; y &amp; "z" &gt; w</a>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// A payload written before items said what they were decodes and renders
// exactly as the existing golden files pin it.
func TestOldPayloadRendersAsBefore(t *testing.T) {
	old := `{"kind":"watch.changed","title":"","task_id":"t1","task_name":"Campus news","items":[` +
		`{"id":"a","title":"Library opens late","url":"https://news.example.edu/a?x=1\u0026y=2","change":"new"},` +
		`{"id":"b","title":"Exam \u003crooms\u003e \u0026 \"times\"","url":"https://news.example.edu/b","change":"changed"},` +
		`{"id":"c","title":"Old notice","change":"removed"}],"occurred_at":"2026-11-30T01:00:00Z"}`
	var m delivery.Message
	if err := json.Unmarshal([]byte(old), &m); err != nil {
		t.Fatal(err)
	}
	golden(t, "changed_en.txt", []byte(Text(m, "en", time.UTC, now)))
	golden(t, "changed_en.tg.html", []byte(strings.Join(TelegramHTML(m, "en", time.UTC, now), "\n-----\n")))
	golden(t, "changed_zh.tg.html", []byte(strings.Join(TelegramHTML(m, "zh", shanghai(t), now), "\n-----\n")))
}

// The previous title shows only when it reads differently from the
// title, and the previous due time only when it moved.
func TestWasShownOnlyWhenItDiffers(t *testing.T) {
	due := now.Add(48 * time.Hour)
	cases := []struct {
		name string
		it   delivery.Item
		want string // the item's line in plain text
	}{
		{"same title after folding", delivery.Item{Title: "Exam  room", WasTitle: "Exam\nroom"}, "• Exam room"},
		{"same due", delivery.Item{Title: "Essay", Due: due, WasDue: due}, "• Essay — due Wed 2 Dec 2026 01:00 UTC (in 2 d)"},
		{"due added", delivery.Item{Title: "Essay", Due: due}, "• Essay — due Wed 2 Dec 2026 01:00 UTC (in 2 d)"},
		{"retitled", delivery.Item{Title: "Exam B", WasTitle: "Exam A"}, "• Exam B (was: Exam A)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := delivery.Message{Kind: delivery.KindChanged, TaskName: "T", Items: []delivery.Item{c.it}}
			lines := strings.Split(strings.TrimSpace(Text(m, "en", time.UTC, now)), "\n")
			if got := lines[len(lines)-1]; got != c.want {
				t.Errorf("line %q, want %q", got, c.want)
			}
		})
	}
}

func TestTelegramHTMLNoUnsafeLinks(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindChanged, TaskName: "T", Items: []delivery.Item{{Title: "x", URL: "javascript:alert(1)"}}}
	if got := strings.Join(TelegramHTML(m, "en", nil, now), ""); strings.Contains(got, "<a") {
		t.Errorf("javascript: URL was linked: %s", got)
	}
}

func longText(n int) string {
	var b strings.Builder
	for b.Len() < n {
		line := fmt.Sprintf("%04d %s", b.Len()/100, strings.Repeat("x", 94))
		b.WriteString(line + "\n")
	}
	return b.String()[:n]
}

func TestTelegramHTMLSplits(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindInbound, Title: "Report", Text: longText(9000)}
	parts := TelegramHTML(m, "en", nil, now)
	if len(parts) != 3 {
		t.Fatalf("got %d parts, want 3", len(parts))
	}
	for i, p := range parts {
		if n := Length(p); n > TelegramLimit {
			t.Errorf("part %d has %d characters", i, n)
		}
	}
	joined := strings.Join(parts, "\n")
	if !strings.Contains(joined, "0000 ") || !strings.Contains(joined, "0089 ") {
		t.Error("lines lost in split")
	}
}

func TestTelegramHTMLCutsLongLineOutsideEntities(t *testing.T) {
	m := delivery.Message{Kind: delivery.KindInbound, Title: "T", Text: strings.Repeat("a&", 5000)}
	parts := TelegramHTML(m, "en", nil, now)
	if len(parts) < 3 {
		t.Fatalf("got %d parts", len(parts))
	}
	for i, p := range parts {
		checkPart(t, i, p)
	}
}

// checkPart asserts p fits and has no broken tag or entity.
func checkPart(t testing.TB, i int, p string) {
	t.Helper()
	if n := Length(p); n > TelegramLimit {
		t.Errorf("part %d has %d characters", i, n)
	}
	depth := 0
	for j := 0; j < len(p); j++ {
		switch p[j] {
		case '<':
			end := strings.IndexByte(p[j:], '>')
			if end < 0 {
				t.Fatalf("part %d: unterminated tag at %d", i, j)
			}
			if p[j+1] == '/' {
				depth--
			} else {
				depth++
			}
			j += end
		case '&':
			end := strings.IndexByte(p[j:], ';')
			if end < 0 || end > 6 {
				t.Fatalf("part %d: broken entity at %d: %q", i, j, p[j:min(len(p), j+8)])
			}
		}
	}
	if depth != 0 {
		t.Errorf("part %d: unbalanced tags", i)
	}
}

func TestTelegramHTMLCountsUTF16(t *testing.T) {
	// Each emoji is two UTF-16 code units: 3000 of them need two parts.
	m := delivery.Message{Kind: delivery.KindInbound, Title: "T", Text: strings.Repeat("😀", 3000)}
	parts := TelegramHTML(m, "en", nil, now)
	if len(parts) != 2 {
		t.Fatalf("got %d parts, want 2", len(parts))
	}
	for i, p := range parts {
		checkPart(t, i, p)
	}
	if Length("a😀&") != 4 {
		t.Errorf("Length miscounts")
	}
}

func TestFeishuCardLimitsItems(t *testing.T) {
	b, err := FeishuCard(many(25), "zh", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	var c card
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Elements) != delivery.MaxItems+1 {
		t.Fatalf("got %d elements, want %d", len(c.Elements), delivery.MaxItems+1)
	}
	if got := c.Elements[delivery.MaxItems].Elements[0].Content; got != "还有 5 项" {
		t.Errorf("more note = %q", got)
	}
}

func FuzzTelegramHTML(f *testing.F) {
	f.Add("Campus news", "Exam <rooms> & times", "https://e.com/?a=1&b=2", "plain\ntext")
	f.Add("", "", "", strings.Repeat("&<>", 3000))
	f.Fuzz(func(t *testing.T, task, title, link, text string) {
		if !utf8.ValidString(task + title + link + text) {
			t.Skip()
		}
		m := delivery.Message{Kind: delivery.KindChanged, TaskName: task, Text: text,
			Items: []delivery.Item{{Title: title, URL: link, Change: delivery.ChangeChanged, WasTitle: task}}}
		for i, p := range TelegramHTML(m, "en", nil, now) {
			checkPart(t, i, p)
		}
	})
}

func BenchmarkTelegramHTML(b *testing.B) {
	m := many(20)
	m.Text = longText(9000)
	for b.Loop() {
		TelegramHTML(m, "en", time.UTC, now)
	}
}

// TestTelegramPack_LongMarkupShortTextCountsTowardThePart: a line too
// long as HTML (a very long link) whose text fits still counts, so the
// next line starts on its own line and the part stays within the limit.
func TestTelegramPack_LongMarkupShortTextCountsTowardThePart(t *testing.T) {
	a, b := strings.Repeat("x", 20), strings.Repeat("y", 25)
	lines := []htmlLine{{html: `<a href="` + a + a + `">` + a + "</a>", plain: a}, {html: b, plain: b}}
	parts := pack(lines, 40)
	if len(parts) != 2 || parts[0] != a || parts[1] != b {
		t.Fatalf("parts %q, want %q and %q", parts, a, b)
	}
}

// TestDurationRoundsAsAPersonReads: "due in" rounds to the nearest minute,
// then hour, then days with the hours left over, in both languages.
func TestDurationRoundsAsAPersonReads(t *testing.T) {
	for _, tc := range []struct {
		d      time.Duration
		en, zh string
	}{
		{20 * time.Second, "1 min", "1 分钟"},
		{14*time.Minute + 40*time.Second, "15 min", "15 分钟"},
		{59*time.Minute + 40*time.Second, "1 h", "1 小时"},
		{22*time.Hour + 59*time.Minute, "23 h", "23 小时"},
		{23*time.Hour + 40*time.Minute, "1 d", "1 天"},
		{26 * time.Hour, "1 d 2 h", "1 天 2 小时"},
		{71*time.Hour + 59*time.Minute, "3 d", "3 天"},
		{70*time.Hour + 50*time.Minute, "2 d 23 h", "2 天 23 小时"},
		{5 * 24 * time.Hour, "5 d", "5 天"},
	} {
		if got := en.duration(tc.d); got != tc.en {
			t.Errorf("en %v = %q, want %q", tc.d, got, tc.en)
		}
		if got := zh.duration(tc.d); got != tc.zh {
			t.Errorf("zh %v = %q, want %q", tc.d, got, tc.zh)
		}
	}
}
