package backup

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "b.zip")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func archive(t *testing.T, entries map[string]string, order ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		w, _ := zw.Create(name)
		w.Write([]byte(entries[name]))
	}
	zw.Close()
	return buf.Bytes()
}

// TestBackup_RoundTripAndRefusals: a backup reads back as written; one
// with a stray entry, a newer format, a driver that is not its snapshot's
// or a snapshot longer than its header says is refused plainly.
func TestBackup_RoundTripAndRefusals(t *testing.T) {
	var buf bytes.Buffer
	m := Manifest{Created: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), Herald: "test", Driver: "bolt"}
	if err := Write(&buf, m, func(w io.Writer) error { _, err := w.Write([]byte("snapshot bytes")); return err }); err != nil {
		t.Fatal(err)
	}
	r, err := Open(writeFile(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := r.Snapshot()
	got, err := io.ReadAll(snap)
	r.Close()
	if err != nil || string(got) != "snapshot bytes" || r.Manifest.Format != Format || r.Manifest.Driver != "bolt" {
		t.Fatalf("read back %q %+v %v", got, r.Manifest, err)
	}

	head := "format: 1\ncreated: 2026-11-02T09:00:00Z\nherald: test\ndriver: bolt\n"
	cases := []struct {
		name    string
		entries map[string]string
		order   []string
		want    string
	}{
		{"stray entry", map[string]string{ManifestName: head, BoltName: "x", "../evil": "x"}, []string{ManifestName, BoltName, "../evil"}, "unexpected entry"},
		{"newer format", map[string]string{ManifestName: strings.Replace(head, "format: 1", "format: 9", 1), BoltName: "x"}, []string{ManifestName, BoltName}, "format 9"},
		{"driver mismatch", map[string]string{ManifestName: strings.Replace(head, "bolt", "redis", 1), BoltName: "x"}, []string{ManifestName, BoltName}, "driver"},
		{"no snapshot", map[string]string{ManifestName: head}, []string{ManifestName}, "lacks"},
	}
	t.Run("snapshot longer than its header", func(t *testing.T) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create(ManifestName)
		w.Write([]byte(head))
		w, _ = zw.CreateRaw(&zip.FileHeader{Name: BoltName, Method: zip.Store, CompressedSize64: 10, UncompressedSize64: 5})
		w.Write([]byte("0123456789"))
		zw.Close()
		r, err := Open(writeFile(t, buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		snap, _ := r.Snapshot()
		if got, err := io.ReadAll(snap); !errors.Is(err, ErrInvalid) {
			t.Fatalf("read %q, %v; want refused", got, err)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(writeFile(t, archive(t, c.entries, c.order...)))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, c.want)
			}
		})
	}
}
