package source

import "testing"

// TestFeedTitles_EscapedVoidTagsStayText: an RSS title has no declared
// type; one that names a void element (<br>, <img>, <hr/>, <wbr>), entity-
// escaped or in CDATA, keeps it as text. A title with a closed element or
// an entity left after XML decoding is still HTML, and a description's
// void elements are still markup.
func TestFeedTitles_EscapedVoidTagsStayText(t *testing.T) {
	res := mustFetch(t, serveBytes(t, readTestdata(t, "rss-escaped-void-tags.xml"), "application/rss+xml"))
	want := []string{
		"Why <br> breaks layout",
		"Lazy <img> loading, measured",
		"When an <hr/> is not a rule",
		"Soft breaks with <wbr> in long words",
		"Bold claims & facts",
	}
	if len(res.Items) != len(want) {
		t.Fatalf("%d items, want %d", len(res.Items), len(want))
	}
	for i, w := range want {
		if got := res.Items[i].Title; got != w {
			t.Errorf("title %d = %q, want %q", i, got, w)
		}
	}
	if got, want := plainText("<p>Line one<br>line two</p>"), "Line one line two"; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
}
