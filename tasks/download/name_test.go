package download

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-bridge/herald/tasks/watch"
)

func TestI8_SafeNameIsOneHarmlessPathElement(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"notes.pdf", "notes.pdf"},
		{"../../x", "____x"},
		{"a/b", "a_b"},
		{`a\b`, "a_b"},
		{"..", "_"},
		{".", "file"},
		{"", "file"},
		{"con", "_con"},
		{"CON.txt", "_CON.txt"},
		{"lpt1.pdf", "_lpt1.pdf"},
		{"console.pdf", "console.pdf"},
		{".hidden", "hidden"},
		{"tab\tnew\nline\x00.pdf", "tabnewline.pdf"},
		{"what?.pdf", "what_.pdf"},
		{"trailing. ", "trailing"},
		{"第一周 讲义.pdf", "第一周 讲义.pdf"},
	} {
		got := safeName(c.in)
		if got != c.want {
			t.Errorf("safeName(%q) = %q, want %q", c.in, got, c.want)
		}
		if !filepath.IsLocal(got) || strings.ContainsAny(got, `/\`) {
			t.Errorf("safeName(%q) = %q is not one local element", c.in, got)
		}
	}
	long := strings.Repeat("长", 200) + ".pdf"
	if got := safeName(long); len(got) > maxNameBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, ".pdf") {
		t.Errorf("a long name became %d bytes (valid %v): %q", len(got), utf8.ValidString(got), got)
	}
}

func TestI8_CheckDirKeepsDownloadsInsideTheirDirectory(t *testing.T) {
	root := filepath.Join(string(filepath.Separator), "srv", "school")
	for _, c := range []struct {
		dir string
		ok  bool
	}{
		{"cs101", true},
		{"terms/2026", true},
		{"../other", false},
		{"", false},
		{filepath.Join(root, "cs101"), true},
		{root, true},
		{filepath.Join(root, "..", "etc"), false},
		{filepath.Join(string(filepath.Separator), "etc"), false},
	} {
		if err := CheckDir(c.dir, []string{root}); (err == nil) != c.ok {
			t.Errorf("CheckDir(%q) = %v, want ok %v", c.dir, err, c.ok)
		}
	}
}

func TestWantedByExtensionOrMediaType(t *testing.T) {
	pdf := &watch.File{Name: "a.PDF", ContentType: "application/pdf"}
	mp4 := &watch.File{Name: "lecture.mp4", ContentType: "video/mp4"}
	for _, c := range []struct {
		types []string
		f     *watch.File
		want  bool
	}{
		{nil, pdf, true},
		{[]string{"pdf"}, pdf, true},
		{[]string{".pdf"}, pdf, true},
		{[]string{"pdf"}, mp4, false},
		{[]string{"video/*"}, mp4, true},
		{[]string{"application/pdf"}, pdf, true},
		{[]string{"application/pdf"}, mp4, false},
	} {
		if got := Wanted(&watch.Download{Types: c.types}, c.f); got != c.want {
			t.Errorf("Wanted(%v, %s) = %v, want %v", c.types, c.f.Name, got, c.want)
		}
	}
	if Wanted(nil, pdf) || Wanted(&watch.Download{}, nil) {
		t.Error("no download spec or no file must keep nothing")
	}
}
