package download

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// openDir opens the task's download directory as an os.Root, creating it:
// <downloads>/<task-id>/<dir> for a relative dir, dir itself for an
// absolute one (the manager checked it lies under a policy root). Every
// write goes through the root, so no name can reach outside it.
func openDir(downloads, taskID, dir string) (*os.Root, error) {
	if filepath.IsAbs(dir) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create the download dir: %w", err)
		}
		return os.OpenRoot(dir)
	}
	if err := os.MkdirAll(downloads, 0o750); err != nil {
		return nil, fmt.Errorf("create the downloads dir: %w", err)
	}
	base, err := os.OpenRoot(downloads)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	sub := path.Join(safeName(taskID), filepath.ToSlash(dir))
	if err := base.MkdirAll(sub, 0o750); err != nil {
		return nil, fmt.Errorf("create the task's download dir: %w", err)
	}
	return base.OpenRoot(sub)
}

// errNotAFile: an HTML page came where a file was expected (a sign-in
// page served for an expired link).
var errNotAFile = errors.New("an HTML page came instead of the file")

// errSize: the body's length is not the size the site listed.
var errSize = errors.New("size differs from the listed size")

// errTooLarge: the body exceeds the bound on one file.
var errTooLarge = errors.New("file is larger than the download bound")

// save writes body to rel inside root: first to a temp name in the same
// directory, synced, checked (HTML where a file was expected, size), then
// renamed, so a final name never holds a partial file. want < 0: the size
// is not known. tmp is the temp file's name, unique per download.
func save(root *os.Root, rel, tmp string, body io.Reader, want, limit int64, htmlOK bool) (int64, error) {
	dir := path.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return 0, fmt.Errorf("create %s: %w", dir, err)
		}
	}
	tmpPath := path.Join(dir, tmp)
	f, err := root.OpenFile(tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return 0, fmt.Errorf("create a temp file: %w", err)
	}
	n, err := copyChecked(f, body, limit, htmlOK)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && want >= 0 && n != want {
		err = fmt.Errorf("%w (%d bytes, listed %d)", errSize, n, want)
	}
	if err == nil {
		err = root.Rename(tmpPath, rel)
	}
	if err != nil {
		_ = root.Remove(tmpPath)
		return n, err
	}
	return n, nil
}

// copyChecked copies at most limit bytes, refusing a body that starts as
// an HTML document unless htmlOK.
func copyChecked(w io.Writer, r io.Reader, limit int64, htmlOK bool) (int64, error) {
	head := make([]byte, 512)
	k, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, err
	}
	head = head[:k]
	if !htmlOK && looksHTML(head) {
		return 0, errNotAFile
	}
	if int64(k) > limit {
		return 0, errTooLarge
	}
	if _, err := w.Write(head); err != nil {
		return 0, err
	}
	n, err := io.Copy(w, io.LimitReader(r, limit-int64(k)+1))
	n += int64(k)
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, errTooLarge
	}
	return n, nil
}

// looksHTML reports whether a body starts as an HTML document.
func looksHTML(head []byte) bool {
	h := bytes.ToLower(bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n"))
	for _, p := range []string{"<!doctype html", "<html", "<head"} {
		if bytes.HasPrefix(h, []byte(p)) {
			return true
		}
	}
	return false
}

// expectsHTML reports whether the file itself is a web page.
func expectsHTML(name, contentType string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(strings.ToLower(contentType), "text/html") || strings.HasSuffix(n, ".html") || strings.HasSuffix(n, ".htm")
}
