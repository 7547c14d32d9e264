package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_OPMLExportCarriesFeedsAddedByAPlainWatch: a feed added with
// `/watch URL` (its kind left to detection) is in `herald export --opml`
// once a run has read it.
func TestCLI_OPMLExportCarriesFeedsAddedByAPlainWatch(t *testing.T) {
	f := newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch "+f.url()+" every 1h\n")
	tid := reTaskID.FindString(out)
	if code != 0 || tid == "" {
		t.Fatalf("watch: exit %d\n%s%s", code, out, errOut)
	}
	waitBaseline(t, dataDir, tid)
	if got := listTasks(t, dataDir)[tid]; got.Source.Kind != "" {
		t.Fatalf("the watched task has kind %q; this test is about a detected one", got.Source.Kind)
	}
	opmlPath := filepath.Join(t.TempDir(), "feeds.opml")
	out = cli(t, dataDir, "export", "--opml", "--out", opmlPath)
	doc, err := os.ReadFile(opmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `<outline type="rss"`) || !strings.Contains(string(doc), `xmlUrl="`+f.url()+`"`) {
		t.Fatalf("export --opml (%s) lacks the watched feed:\n%s", strings.TrimSpace(out), doc)
	}
	if !strings.Contains(out, "wrote 1 task(s)") {
		t.Errorf("export --opml says %q", out)
	}
}
