// Package safezip reads a ZIP archive that came from someone else: every
// entry's name, type, count and size is checked, and sizes are counted
// while reading, never taken from the archive's headers (docs/operations.md, Export,
// import and backup). An archive it refuses yields nothing, so a caller
// that writes only after Read returns writes nothing for a refused one.
package safezip

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
)

// Limits bound an archive. A zero field takes the bundle default.
type Limits struct {
	Entries    int   // most entries, directories included
	Compressed int64 // most bytes of the archive itself
	Expanded   int64 // most bytes of all entries, read
	Entry      int64 // most bytes of one entry, read
	Ratio      int64 // most expanded bytes per compressed byte, per entry and in all
}

// BundleLimits are the limits of a task bundle.
var BundleLimits = Limits{Entries: 512, Compressed: 8 << 20, Expanded: 32 << 20, Entry: 4 << 20, Ratio: 200}

func (l Limits) withDefaults() Limits {
	d := BundleLimits
	if l.Entries > 0 {
		d.Entries = l.Entries
	}
	if l.Compressed > 0 {
		d.Compressed = l.Compressed
	}
	if l.Expanded > 0 {
		d.Expanded = l.Expanded
	}
	if l.Entry > 0 {
		d.Entry = l.Entry
	}
	if l.Ratio > 0 {
		d.Ratio = l.Ratio
	}
	return d
}

// ErrRefused is wrapped by every refusal of an unsafe or oversized archive.
var ErrRefused = errors.New("archive refused")

// ErrMalformed is wrapped when the bytes are not a readable ZIP archive.
var ErrMalformed = errors.New("not a readable ZIP archive")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// Entry is one regular file of an archive, read in full.
type Entry struct {
	Name string
	Data []byte
}

// Read reads the archive from r within l and returns its regular files in
// archive order. Directories are checked and left out.
func Read(r io.Reader, l Limits) ([]Entry, error) {
	l = l.withDefaults()
	raw, err := io.ReadAll(io.LimitReader(r, l.Compressed+1))
	if err != nil {
		return nil, fmt.Errorf("read the archive: %w", err)
	}
	if int64(len(raw)) > l.Compressed {
		return nil, refuse("the archive is larger than %s", size(l.Compressed))
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(zr.File) > l.Entries {
		return nil, refuse("the archive has more than %d entries", l.Entries)
	}
	if err := checkNames(zr.File); err != nil {
		return nil, err
	}
	var out []Entry
	var total int64
	for _, f := range zr.File {
		if f.Mode().IsDir() {
			continue
		}
		data, err := readEntry(f, l, l.Expanded-total)
		if err != nil {
			return nil, err
		}
		total += int64(len(data))
		if total > l.Ratio*int64(len(raw)) {
			return nil, refuse("the archive expands more than %d times its size", l.Ratio)
		}
		out = append(out, Entry{Name: f.Name, Data: data})
	}
	return out, nil
}

// checkNames refuses names that could land outside a directory or on top
// of one another, and entries that are not plain files or directories.
func checkNames(files []*zip.File) error {
	seen := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name, "/")
		if err := checkName(name); err != nil {
			return refuse("entry %q: %v", f.Name, err)
		}
		switch m := f.Mode(); {
		case m&fs.ModeSymlink != 0:
			return refuse("entry %q is a symbolic link", f.Name)
		case !m.IsDir() && !m.IsRegular():
			return refuse("entry %q is not a plain file", f.Name)
		}
		folded := fold(name)
		if prev, ok := seen[folded]; ok {
			return refuse("entries %q and %q have the same name but for case", prev, f.Name)
		}
		seen[folded] = f.Name
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case strings.ContainsRune(name, '\\'):
		return errors.New("backslash in the name")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	case len(name) >= 2 && name[1] == ':':
		return errors.New("drive letter")
	case strings.ContainsRune(name, 0):
		return errors.New("NUL in the name")
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return errors.New("path goes up with ..")
		}
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return errors.New("not a local path")
	}
	return nil
}

// fold maps names that a case-insensitive file system would take for one
// name to the same string.
func fold(s string) string { return strings.ToLower(strings.ToUpper(s)) }

// readEntry reads f, counting what it yields against the entry limit, the
// room left of the expanded limit and the compression ratio.
func readEntry(f *zip.File, l Limits, room int64) ([]byte, error) {
	limit := min(l.Entry, room)
	if f.UncompressedSize64 > uint64(l.Entry) {
		return nil, refuse("entry %q is larger than %s", f.Name, size(l.Entry))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: entry %q: %v", ErrMalformed, f.Name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil && !errors.Is(err, zip.ErrChecksum) && !errors.Is(err, zip.ErrFormat) {
		return nil, fmt.Errorf("%w: entry %q: %v", ErrMalformed, f.Name, err)
	}
	switch {
	case int64(len(data)) > l.Entry:
		return nil, refuse("entry %q is larger than %s", f.Name, size(l.Entry))
	case int64(len(data)) > limit:
		return nil, refuse("the archive expands to more than %s", size(l.Expanded))
	case errors.Is(err, zip.ErrFormat):
		return nil, refuse("entry %q is longer than its header says", f.Name)
	case err != nil:
		return nil, fmt.Errorf("%w: entry %q: %v", ErrMalformed, f.Name, err)
	}
	// The header's compressed size is bounded by the archive it sits in.
	if c := max(min(int64(f.CompressedSize64), l.Compressed), 1); int64(len(data)) > l.Ratio*c {
		return nil, refuse("entry %q expands more than %d times its size", f.Name, l.Ratio)
	}
	return data, nil
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
