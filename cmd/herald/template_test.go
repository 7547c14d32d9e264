package main

import (
	"bytes"
	"strings"
	"testing"
)

// addDescribed publishes one more item with an HTML description.
func (f *feed) addDescribed(guid, title, description string) {
	item := "<item><title>" + title + "</title><link>https://theomnishow.omnigroup.com/" + guid + "</link><guid>" + guid +
		"</guid><description><![CDATA[" + description + "]]></description></item>"
	f.mu.Lock()
	f.doc = bytes.Replace(f.doc, []byte("</channel>"), []byte(item+"</channel>"), 1)
	f.mu.Unlock()
}

// TestTemplatePreview_RendersTheLatestItemsPerRecipient: after a feed
// gains an item, `herald template preview` shows the task's latest
// notice as each recipient gets it: in the default layout with the
// item's summary, in a recipient's own template, and, for a template
// that fails at run time, in the default layout with a word on stderr.
func TestTemplatePreview_RendersTheLatestItemsPerRecipient(t *testing.T) {
	f := newFeed(t)
	cfg := adjustExample(t, freeAddr(t), map[string]string{
		"recipients:\n": "recipients:\n" +
			"  brief:\n    address: \"inbox:console:brief\"\n    template: |\n      {{.task}}: {{len .items}} new\n      {{range .items}}* {{.title | upper}} — {{trunc 20 .summary}}\n      {{end}}\n" +
			"  broken:\n    address: \"inbox:console:broken\"\n    template: \"{{index .items 9}}\"\n" +
			"  titles:\n    address: \"inbox:console:titles\"\n    format: title\n",
		"tasks: []": "tasks:\n  - id: news\n    name: Course news\n    source: {kind: rss, url: \"" + f.url() + "\"}\n" +
			"    schedule: every 30m\n    notify: [brief, broken, titles]\n",
	})
	_, dataDir := startServe(t, cfg)
	waitBaseline(t, dataDir, "news")
	f.addDescribed("exam-moved", "Exam moved", "<p>The final exam moves to <b>Friday</b> &amp; room 204.</p>")
	cli(t, dataDir, "tasks", "run", "news")

	plain := cli(t, dataDir, "template", "preview", "--task", "news")
	for _, want := range []string{"1 change in Course news", "[new] Exam moved", "The final exam moves to Friday & room 204."} {
		if !strings.Contains(plain, want) {
			t.Errorf("default preview lacks %q:\n%s", want, plain)
		}
	}
	if got := cli(t, dataDir, "template", "preview", "--task", "news", "--recipient", "brief"); got != "Course news: 1 new\n\n* EXAM MOVED — The final exam move…\n" {
		t.Errorf("brief's preview:\n%q", got)
	}
	if got := cli(t, dataDir, "template", "preview", "--task", "news", "--recipient", "titles"); strings.Contains(got, "Friday") || !strings.Contains(got, "Exam moved") {
		t.Errorf("titles' preview shows the summary or lacks the title:\n%s", got)
	}
	out, errOut, code := run(t, "template", "preview", "--task", "news", "--recipient", "broken", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "The final exam moves to Friday") || !strings.Contains(errOut, "template failed") {
		t.Errorf("broken's preview: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
