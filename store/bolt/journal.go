package bolt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/herald-bridge/herald/store"
)

// The sending journal (Ledger.Sending) is one append-only file per worker
// beside the bbolt file: a line "<attempt n> <effect key>" for each attempt
// about to be sent, written before the request leaves. A file that exists
// means its worker records every send; Recover reads the files of dead
// workers and then removes them.
//
// The journal is written, never synced: it only has to outlive the
// process, not the machine. The file begins with the boot id of the
// machine that wrote it. When recovery runs on the same boot, whatever
// the killed process wrote is in the page cache, so an attempt with no
// record provably never left. After a reboot (a power loss may have taken
// unsynced records) the journal is not trusted: every interrupted attempt
// counts as maybe sent and ends unknown, as it would without a journal.
// So a journal write costs no sync and no bbolt transaction, and nothing
// acknowledged to anyone rests on it.
//
// A record is needed only while its attempt is in flight in the ledger.
// Each worker keeps the records not yet settled in memory; when its file
// passes journalCompactAt it is rewritten with only those (a new file,
// renamed over the old one).

// journalCompactAt is the file size past which a worker's journal is
// rewritten with its unsettled records only (a variable for tests).
var journalCompactAt int64 = 1 << 20

const journalExt = ".sending"

// journal holds the open journals of this process's workers.
type journal struct {
	dir  string
	boot string // "": unknown, the journal is never trusted

	mu      sync.Mutex
	workers map[string]*workerJournal
}

func newJournal(dbPath string) *journal {
	return &journal{dir: dbPath + ".journal", boot: bootID(), workers: map[string]*workerJournal{}}
}

// bootID names this boot of the machine ("" where unknown).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (j *journal) header() []byte { return []byte("boot " + j.boot + "\n") }

func (j *journal) path(worker string) string {
	return filepath.Join(j.dir, hex.EncodeToString([]byte(worker))+journalExt)
}

// workerJournal is one worker's file.
type workerJournal struct {
	j      *journal
	worker string

	mu   sync.Mutex
	f    *os.File
	size int64
	buf  []byte
	err  error          // closed, or a failed write: the journal refuses from then on
	open map[string]int // key -> attempt recorded and not yet settled
}

// open returns worker's journal, creating its file on first use.
func (j *journal) open(worker string) (*workerJournal, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if w := j.workers[worker]; w != nil {
		return w, nil
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(j.path(worker), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	h := j.header()
	if _, err := f.Write(h); err != nil {
		_ = f.Close()
		return nil, err
	}
	w := &workerJournal{j: j, worker: worker, f: f, size: int64(len(h)), open: map[string]int{}}
	j.workers[worker] = w
	return w, nil
}

// record appends refs: one write, in the page cache when it returns.
func (w *workerJournal) record(refs []store.AttemptRef) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = w.buf[:0]
	for _, r := range refs {
		w.buf = appendRecord(w.buf, r.Key, r.N)
		w.open[r.Key] = r.N
	}
	if w.size+int64(len(w.buf)) > journalCompactAt {
		if err := w.rewrite(); err != nil {
			w.err = fmt.Errorf("bolt: sending journal: %v: %w", err, store.ErrUnavailable)
		}
		return w.err
	}
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("bolt: sending journal: %v: %w", err, store.ErrUnavailable)
		return w.err
	}
	w.size += int64(len(w.buf))
	return nil
}

func appendRecord(b []byte, key string, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	b = append(b, key...)
	return append(b, '\n')
}

// rewrite replaces the file with the header and every unsettled record
// (those being recorded included), written under a temporary name and
// renamed over the old file; w.mu is held.
func (w *workerJournal) rewrite() error {
	keep := w.j.header()
	for k, n := range w.open {
		keep = appendRecord(keep, k, n)
	}
	p := w.j.path(w.worker)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(keep); err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	_ = w.f.Close()
	w.f, w.size = f, int64(len(keep))
	return nil
}

// settled forgets key's record once its outcome is committed to the
// ledger: only then may a rewrite drop it.
func (j *journal) settled(worker, key string) {
	j.mu.Lock()
	w := j.workers[worker]
	j.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.open, key)
	w.mu.Unlock()
}

// read returns a dead worker's records: whether its journal can be
// trusted (it exists and was written on this boot), and per key the
// attempts recorded. A torn last line (a write the kill cut short, never
// followed by a send) is ignored.
//
// Reading closes the journal for good if its worker is open in this
// process after all (a worker only slow, not dead): it records nothing
// more, so it sends nothing more.
func (j *journal) read(worker string) (trusted bool, sent map[string][]int, err error) {
	j.mu.Lock()
	w := j.workers[worker]
	j.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("bolt: sending journal of %q: recovered as stopped: %w", worker, store.ErrLeaseLost)
		}
		w.mu.Unlock()
	}
	data, err := os.ReadFile(j.path(worker))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1]
	}
	head, rest, _ := bytes.Cut(data, []byte("\n"))
	if j.boot == "" || string(head) != "boot "+j.boot {
		return false, nil, nil // written before a reboot, or on a machine that cannot tell
	}
	sent = map[string][]int{}
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		n, key, ok := bytes.Cut(line, []byte(" "))
		if !ok || len(key) == 0 {
			continue
		}
		a, err := strconv.Atoi(string(n))
		if err != nil {
			continue
		}
		sent[string(key)] = append(sent[string(key)], a)
	}
	return true, sent, nil
}

// forget removes the journals of workers that are not alive and not open
// in this process: Recover has ended their attempts.
func (j *journal) forget(alive func(string) bool) error {
	entries, err := os.ReadDir(j.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), journalExt)
		if !ok {
			if strings.HasSuffix(e.Name(), journalExt+".tmp") {
				_ = os.Remove(filepath.Join(j.dir, e.Name()))
			}
			continue
		}
		raw, err := hex.DecodeString(name)
		if err != nil {
			continue
		}
		worker := string(raw)
		if j.workers[worker] != nil || (alive != nil && alive(worker)) {
			continue
		}
		if err := os.Remove(filepath.Join(j.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, w := range j.workers {
		w.mu.Lock()
		_ = w.f.Close()
		if w.err == nil {
			w.err = errClosed
		}
		w.mu.Unlock()
	}
}
