package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The ledger log is where the ledger's hot writes become durable: each
// group-commit round appends its records to the log and syncs it once
// (one write and one fdatasync), where a bbolt commit costs two syncs and
// a page run per touched bucket. A checkpoint (overlay.go) later copies
// the logged effects into bbolt in one transaction that also records the
// log generation it covers; the log is then no longer needed up to there.
//
// Two files take turns: while one is being checkpointed the other takes
// new records, and a file is written again only after its checkpoint
// committed. Each file is sized ahead (logPrealloc) so a sync does not
// have to grow it, and starts with a header naming its generation. A
// record carries a checksum over the generation and its bytes, so stale
// records of an older turn of the same file, and a torn last write, end
// the replay there.
//
// A record is one effect's whole state after an operation, so replaying
// a record twice, or a newer one after an older one, leaves the same
// state: the claim's record also carries the immutable body.

const (
	logMagic    = "heraldL1"
	logHeader   = 16 // magic, generation
	logPrealloc = 4 << 20
	logRecHead  = 8 // length, checksum
)

var (
	crcTable  = crc32.MakeTable(crc32.Castagnoli)
	keyLogGen = []byte("ledger_log_gen") // meta: the last log generation checkpointed
)

// ledgerLog is the file being appended to. Only the committer's goroutine
// uses it.
type ledgerLog struct {
	paths [2]string
	cur   int // index into paths
	f     *os.File
	gen   uint64
	off   int64
	buf   []byte
}

func logPaths(dir string) [2]string {
	return [2]string{filepath.Join(dir, "ledger-0.log"), filepath.Join(dir, "ledger-1.log")}
}

// startLog opens paths[idx] for generation gen, writing its header.
func startLog(paths [2]string, idx int, gen uint64) (*ledgerLog, error) {
	l := &ledgerLog{paths: paths}
	return l, l.turn(idx, gen)
}

// turn switches to paths[idx] as generation gen.
func (l *ledgerLog) turn(idx int, gen uint64) error {
	if err := os.MkdirAll(filepath.Dir(l.paths[idx]), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(l.paths[idx], os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err == nil && st.Size() < logPrealloc {
		err = f.Truncate(logPrealloc)
		if err == nil {
			err = f.Sync() // the size, once; later syncs leave it alone
		}
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	h := make([]byte, logHeader)
	copy(h, logMagic)
	binary.BigEndian.PutUint64(h[8:], gen)
	if _, err := f.WriteAt(h, 0); err != nil {
		_ = f.Close()
		return err
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.cur, l.f, l.gen, l.off, l.buf = idx, f, gen, logHeader, l.buf[:0]
	return nil
}

// rotate moves on to the other file as the next generation and returns
// the generation just closed.
func (l *ledgerLog) rotate() (uint64, error) {
	done := l.gen
	return done, l.turn(1-l.cur, done+1)
}

// add buffers one record: the effect's key, its body (nil after the
// claim's record) and its encoded state.
func (l *ledgerLog) add(key string, body, state []byte) {
	start := len(l.buf)
	l.buf = append(l.buf, make([]byte, logRecHead)...)
	w := writer(l.buf)
	w = w.str(key)
	w = binary.AppendUvarint(w, uint64(len(body)))
	w = append(w, body...)
	w = append(w, state...)
	l.buf = w
	rec := l.buf[start+logRecHead:]
	binary.BigEndian.PutUint32(l.buf[start:], uint32(len(rec)))
	binary.BigEndian.PutUint32(l.buf[start+4:], recordSum(l.gen, rec))
}

func recordSum(gen uint64, rec []byte) uint32 {
	var g [8]byte
	binary.BigEndian.PutUint64(g[:], gen)
	return crc32.Update(crc32.Checksum(g[:], crcTable), crcTable, rec)
}

// sync writes the buffered records and makes them durable.
func (l *ledgerLog) sync() error {
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.f.WriteAt(l.buf, l.off); err != nil {
		return err
	}
	if err := fdatasync(l.f); err != nil {
		return err
	}
	l.off += int64(len(l.buf))
	l.buf = l.buf[:0]
	return nil
}

// size is how much the current file holds.
func (l *ledgerLog) size() int64 { return l.off }

func (l *ledgerLog) close() {
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// logRecord is one replayed record.
type logRecord struct {
	key   string
	body  []byte // nil: the effect was claimed in an earlier record
	state []byte
}

// readLog returns the generation of the file at path and its records,
// up to the first that does not check out. A missing file, or one without
// a valid header, is generation 0 with no records.
func readLog(path string) (uint64, []logRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if len(data) < logHeader || string(data[:8]) != logMagic {
		return 0, nil, nil
	}
	gen := binary.BigEndian.Uint64(data[8:])
	var recs []logRecord
	for rest := data[logHeader:]; len(rest) >= logRecHead; {
		n := int(binary.BigEndian.Uint32(rest))
		if n == 0 || n > len(rest)-logRecHead {
			break
		}
		rec := rest[logRecHead : logRecHead+n]
		if binary.BigEndian.Uint32(rest[4:]) != recordSum(gen, rec) {
			break
		}
		rest = rest[logRecHead+n:]
		r := reader{b: rec}
		lr := logRecord{key: r.str("log key")}
		bl, k := binary.Uvarint(r.b)
		if r.err != nil || k <= 0 || bl > uint64(len(r.b)-k) {
			return 0, nil, fmt.Errorf("%w: ledger log record", errCorruptEffect)
		}
		if bl > 0 {
			lr.body = r.b[k : k+int(bl)]
		}
		lr.state = r.b[k+int(bl):]
		recs = append(recs, lr)
	}
	return gen, recs, nil
}
