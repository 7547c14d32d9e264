package opml

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/bundle"
)

func names(list []bundle.Task) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.Name+" <"+t.Source.URL+">")
	}
	return out
}

func readFile(t *testing.T, name string) []bundle.Task {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	list, err := Read(f)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return list
}

// TestOPML_ReadersExportShapes reads the two shapes feed readers export:
// one level of categories with HTML entities, a bare ampersand and a
// feed:// address in UTF-8, and folders nested two deep in a GB2312 document whose outlines
// are not self-closing, one with a title but no text, one empty folder.
func TestOPML_ReadersExportShapes(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"flat-categories.opml", []string{
			"Campus / Library notices <https://library.example.edu/notices.rss>",
			"Campus / Café & Dining <https://dining.example.edu/feed?format=rss&lang=en>",
			"Engineering / Build & Release notes <https://eng.example.org/releases.atom>",
			"Uncategorised weekly <https://weekly.example.net/rss>",
			"Podcast <https://podcasts.example.net/show.xml>",
		}},
		{"nested-gb2312.opml", []string{
			"科技 / 博客 / 小站周报 <https://blog.example.cn/feed.xml>",
			"科技 / 博客 / 无文字标题 <https://notes.example.cn/atom.xml>",
			"科技 / 新闻 / 校园新闻 <https://news.example.edu.cn/rss>",
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			list := readFile(t, c.file)
			if got := names(list); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			for _, task := range list {
				if task.Source.Kind != "rss" {
					t.Errorf("%s: kind %q", task.Name, task.Source.Kind)
				}
			}
		})
	}
}

// TestOPML_Windows1251Prolog: a Cyrillic list in the charset its prolog
// declares reads as the same names.
func TestOPML_Windows1251Prolog(t *testing.T) {
	// "Новости" in Windows-1251.
	name := []byte{0xcd, 0xee, 0xe2, 0xee, 0xf1, 0xf2, 0xe8}
	doc := append([]byte(`<?xml version="1.0" encoding="windows-1251"?><opml version="2.0"><body><outline text="`), name...)
	doc = append(doc, []byte(`" xmlUrl="https://news.example.ru/rss"/></body></opml>`)...)
	list, err := Read(bytes.NewReader(doc))
	if err != nil || len(list) != 1 || list[0].Name != "Новости" {
		t.Fatalf("read = %v, %v", names(list), err)
	}
}

// TestOPML_RoundTripKeepsHeraldSettings: herald's own settings ride in
// its namespace on self-closing outlines and come back as they were.
func TestOPML_RoundTripKeepsHeraldSettings(t *testing.T) {
	in := []bundle.Task{
		{Name: "Campus / Library <notices> & \"more\"", Source: bundle.Source{Kind: "rss", URL: "https://library.example.edu/feed?a=1&b=2"},
			Schedule: "daily 08:00", RemindBefore: []string{"72h", "2h"}, Notify: []string{"ops"}, Include: []string{"exam", "closure"}, Exclude: []string{"ad"}},
		{Name: "plain", Source: bundle.Source{Kind: "rss", URL: "https://plain.example.org/rss"}},
		{Name: "calendar", Source: bundle.Source{Kind: "ical", URL: "https://cal.example.org/x.ics"}},
		{Name: "tokened", Source: bundle.Source{Kind: "rss", URL: "https://x.example.org/rss"}, Needs: []string{"url parameter token"}},
	}
	var buf bytes.Buffer
	n, err := Write(&buf, "herald feeds", time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), in)
	if err != nil || n != 2 {
		t.Fatalf("wrote %d, %v", n, err)
	}
	out := buf.String()
	self := regexp.MustCompile(`<outline type="rss" text="[^"]*" xmlUrl="[^"]*"[^>]*/>`)
	if got := len(self.FindAllString(out, -1)); got != 2 || strings.Contains(out, "</outline>") {
		t.Errorf("want two self-closing rss outlines, got %d:\n%s", got, out)
	}
	if !strings.Contains(out, `xmlns:herald="`+Namespace+`"`) || !strings.Contains(out, `herald:schedule="daily 08:00"`) {
		t.Errorf("settings not in herald's namespace:\n%s", out)
	}
	back, err := Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 {
		t.Fatalf("read back %d tasks", len(back))
	}
	for i, want := range in[:2] {
		got := back[i]
		if got.Name != want.Name || got.Source.URL != want.Source.URL || got.Source.Kind != want.Source.Kind || got.Schedule != want.Schedule ||
			strings.Join(got.RemindBefore, ",") != strings.Join(want.RemindBefore, ",") ||
			strings.Join(got.Notify, ",") != strings.Join(want.Notify, ",") ||
			strings.Join(got.Include, ",") != strings.Join(want.Include, ",") ||
			strings.Join(got.Exclude, ",") != strings.Join(want.Exclude, ",") {
			t.Errorf("round trip %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestOPML_NotAFeedList: what is not OPML says so plainly.
func TestOPML_NotAFeedList(t *testing.T) {
	for _, doc := range []string{"", "hello", "<html><body>x</body></html>", "<opml><body><outline xmlUrl=\"https://a.example/\">" + strings.Repeat("<outline text=\"f\">", 70)} {
		if _, err := Read(strings.NewReader(doc)); err == nil {
			t.Errorf("Read(%.40q) accepted it", doc)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"flat-categories.opml", "nested-gb2312.opml"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<opml xmlns:herald="` + Namespace + `"><body><outline xmlUrl="https://a.example/" herald:remind="1h,,x"/></body></opml>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(list) > MaxFeeds {
			t.Fatalf("%d feeds", len(list))
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, "t", time.Unix(0, 0), list); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("our own output does not read back: %v\n%s", err, buf.String())
		}
		if len(back) > len(list) {
			t.Fatalf("read back %d of %d", len(back), len(list))
		}
	})
}
