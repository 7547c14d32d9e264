// Package backup is the file `herald backup` writes and `herald restore`
// reads: a ZIP archive holding herald-backup.yaml (format, time, version,
// store driver) and one snapshot of the whole store — tasks, grants,
// snapshots, the effect ledger, inboxes, channel state — taken as one
// consistent view while the service runs (docs/operations.md, Export, import and
// backup). The archive's entry names are compared, never used as paths.
package backup

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goccy/go-yaml"
)

// Entry names.
const (
	ManifestName = "herald-backup.yaml"
	BoltName     = "store.db"   // a bbolt file, as bbolt's Tx.WriteTo writes it
	RedisName    = "redis.dump" // the store's keys as DUMP values (store/redis)
)

// Format is the backup format this binary writes and the newest it reads.
const Format = 1

// Manifest is herald-backup.yaml.
type Manifest struct {
	Format  int       `yaml:"format"`
	Created time.Time `yaml:"created"`
	Herald  string    `yaml:"herald"`
	Driver  string    `yaml:"driver"`               // bolt | redis
	Prefix  string    `yaml:"key_prefix,omitempty"` // redis: the key prefix of the dumped keys
}

// ErrInvalid is wrapped when a file is not a herald backup (or a newer one).
var ErrInvalid = errors.New("not a herald backup this version can restore")

// payloadName is the snapshot's entry name for a driver.
func payloadName(driver string) string {
	if driver == "redis" {
		return RedisName
	}
	return BoltName
}

// Write writes a backup archive to w: the manifest, then the snapshot
// snap writes.
func Write(w io.Writer, m Manifest, snap func(io.Writer) error) error {
	m.Format = Format
	head, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	entry := func(name string) (io.Writer, error) {
		return zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: m.Created})
	}
	f, err := entry(ManifestName)
	if err != nil {
		return err
	}
	if _, err := f.Write(head); err != nil {
		return err
	}
	f, err = entry(payloadName(m.Driver))
	if err != nil {
		return err
	}
	if err := snap(f); err != nil {
		return fmt.Errorf("snapshot the store: %w", err)
	}
	return zw.Close()
}

// Reader is an opened backup.
type Reader struct {
	zr       *zip.ReadCloser
	Manifest Manifest
	payload  *zip.File
}

// maxManifest bounds herald-backup.yaml.
const maxManifest = 64 << 10

// Open opens the backup at path and reads its manifest. It refuses an
// archive holding anything but a manifest and one snapshot.
func Open(path string) (*Reader, error) {
	zr, err := zip.OpenReader(path)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	r := &Reader{zr: zr}
	fail := func(format string, args ...any) (*Reader, error) {
		_ = zr.Close()
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	var head *zip.File
	for _, f := range zr.File {
		switch {
		case f.Name == ManifestName && head == nil:
			head = f
		case (f.Name == BoltName || f.Name == RedisName) && r.payload == nil:
			r.payload = f
		default:
			return fail("unexpected entry %q", f.Name)
		}
	}
	if head == nil || r.payload == nil {
		return fail("the archive lacks %s or the store snapshot", ManifestName)
	}
	rc, err := head.Open()
	if err != nil {
		return fail("%v", err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxManifest))
	_ = rc.Close()
	if err != nil {
		return fail("%v", err)
	}
	if err := yaml.Unmarshal(data, &r.Manifest); err != nil {
		return fail("unreadable %s", ManifestName)
	}
	m := r.Manifest
	switch {
	case m.Format > Format:
		return fail("it is format %d and this herald reads format %d; restore it with a newer herald", m.Format, Format)
	case m.Format < 1:
		return fail("%s has no format version", ManifestName)
	case payloadName(m.Driver) != r.payload.Name:
		return fail("the manifest names store driver %q but the snapshot is %s", m.Driver, r.payload.Name)
	}
	return r, nil
}

// Snapshot opens the store snapshot for reading. It yields exactly the
// size its header declares and fails on anything longer.
func (r *Reader) Snapshot() (io.ReadCloser, error) {
	rc, err := r.payload.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &exact{rc: rc, left: int64(r.payload.UncompressedSize64)}, nil
}

// Close closes the archive.
func (r *Reader) Close() error { return r.zr.Close() }

// exact refuses a snapshot entry that runs past its declared size.
type exact struct {
	rc   io.ReadCloser
	left int64
}

func (e *exact) Read(p []byte) (int, error) {
	if e.left <= 0 {
		var one [1]byte
		if n, err := e.rc.Read(one[:]); n > 0 || (err != nil && err != io.EOF) {
			return 0, fmt.Errorf("%w: the snapshot is not what its header says", ErrInvalid)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.rc.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("%w: the snapshot is shorter than its header says", ErrInvalid)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (e *exact) Close() error { return e.rc.Close() }
