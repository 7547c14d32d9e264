package download

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/herald-bridge/herald/tasks/watch"
)

// maxNameBytes bounds one sanitised name, well inside every file system's
// limit of 255 bytes.
const maxNameBytes = 180

// reserved are the device names Windows refuses as file names, with or
// without an extension.
var reserved = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true, "conin$": true, "conout$": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// safeName turns a name from the site into one path element that is safe
// on every file system: no separators, no "..", no control characters or
// characters Windows refuses, no reserved device name, not hidden (a
// leading dot is herald's own temp files'), bounded in length. Never
// empty.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			// dropped: control characters and undecodable bytes
		case strings.ContainsRune(`/\<>:"|?*`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name := b.String()
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", "_")
	}
	name = strings.TrimRight(strings.TrimSpace(name), ". ")
	name = strings.TrimLeft(name, ". ")
	if len(name) > maxNameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 || !utf8.ValidString(ext) {
			ext = ""
		}
		cut := maxNameBytes - len(ext)
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + ext
	}
	stem, _, _ := strings.Cut(strings.ToLower(name), ".")
	if reserved[strings.TrimSpace(stem)] {
		name = "_" + name
	}
	if name == "" {
		name = "file"
	}
	return name
}

// relName is where a file is kept, relative to the task's download dir:
// its course's folder, then its own name, both sanitised.
func relName(f *watch.File) string {
	if strings.TrimSpace(f.Course) == "" {
		return safeName(f.Name)
	}
	return safeName(f.Course) + "/" + safeName(f.Name)
}

// Distinct gives files that would be kept under the same name (two
// folders of one course holding "notes.pdf") names of their own, the
// site's file id before the extension: "notes (1234).pdf". Files whose
// names are unique keep them. It changes the files in place.
func Distinct(files []*watch.File) {
	count := map[string]int{}
	for _, f := range files {
		count[strings.ToLower(relName(f))]++
	}
	for _, f := range files {
		if count[strings.ToLower(relName(f))] > 1 {
			ext := path.Ext(f.Name)
			f.Name = strings.TrimSuffix(f.Name, ext) + " (" + f.ID + ")" + ext
		}
	}
}
