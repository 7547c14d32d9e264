package bolt

import (
	"bufio"
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
// about to be sent. Concurrent callers share one write and one fdatasync
// (group commit), so the record costs no bbolt transaction: no page
// writes, one sync instead of two. A file that exists means its worker
// records every send; Recover reads the files of dead workers and then
// removes them.
//
// After each sync a line "ok" follows, written without a sync of its own,
// and only then are the callers told to send. The file begins with the
// boot id of the machine that wrote it: when recovery runs on the same
// boot, what the process wrote is in the page cache whether or not it was
// synced, so records after the last "ok" (a kill during the sync) were
// never followed by a send. After a reboot (power loss) an "ok" may be
// lost with its record kept, so every record then counts as maybe sent.
//
// A record is needed only while its attempt is in flight in the ledger.
// Each worker keeps the records not yet settled in memory; when its file
// passes journalCompactAt it is rewritten with only those (a new file,
// synced, renamed over the old one).

// journalCompactAt is the file size past which a worker's journal is
// rewritten with its unsettled records only (a variable for tests).
var journalCompactAt int64 = 1 << 20

const journalExt = ".sending"

// journal holds the open journals of this process's workers.
type journal struct {
	dir    string
	noSync bool
	boot   string

	mu      sync.Mutex
	workers map[string]*workerJournal
}

func newJournal(dbPath string, noSync bool) *journal {
	return &journal{dir: dbPath + ".journal", noSync: noSync, boot: bootID(), workers: map[string]*workerJournal{}}
}

// bootID names this boot of the machine ("" where unknown: every record
// then counts as maybe sent).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (j *journal) header() []byte {
	if j.boot == "" {
		return nil
	}
	return []byte("boot " + j.boot + "\n")
}

var okLine = []byte("ok\n")

func (j *journal) path(worker string) string {
	return filepath.Join(j.dir, hex.EncodeToString([]byte(worker))+journalExt)
}

// workerJournal is one worker's file and its group commit.
type workerJournal struct {
	j      *journal
	worker string

	mu       sync.Mutex
	cond     *sync.Cond
	f        *os.File
	size     int64
	buf      []byte         // records waiting for the next flush
	next     uint64         // the batch buf belongs to
	flushed  uint64         // last batch on disk
	flushing bool           // a caller is writing a batch
	err      error          // a failed write: the journal refuses from then on
	open     map[string]int // key -> attempt recorded and not yet settled
}

// open returns worker's journal, creating its file (and syncing the
// directory, so the file's existence is durable) on first use.
func (j *journal) open(worker string) (*workerJournal, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if w := j.workers[worker]; w != nil {
		return w, nil
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return nil, err
	}
	p := j.path(worker)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Size() == 0 {
		h := j.header()
		if _, err := f.Write(h); err == nil && !j.noSync {
			err = datasync(f)
		}
		if err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if !j.noSync {
		if err := syncDir(j.dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	w := &workerJournal{j: j, worker: worker, f: f, size: st.Size(), next: 1, open: map[string]int{}}
	w.cond = sync.NewCond(&w.mu)
	j.workers[worker] = w
	return w, nil
}

// record appends refs and returns once they are on disk.
func (w *workerJournal) record(refs []store.AttemptRef) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, r := range refs {
		w.buf = strconv.AppendInt(w.buf, int64(r.N), 10)
		w.buf = append(w.buf, ' ')
		w.buf = append(w.buf, r.Key...)
		w.buf = append(w.buf, '\n')
		w.open[r.Key] = r.N
	}
	mine := w.next
	for w.flushed < mine && w.err == nil {
		if w.flushing {
			w.cond.Wait()
			continue
		}
		// Lead one flush of everything queued so far.
		w.flushing = true
		batch, data := w.next, w.buf
		w.next++
		w.buf = nil
		compact := w.size+int64(len(data)) > journalCompactAt
		var keep []byte
		if compact {
			keep = w.unsettled()
		}
		w.mu.Unlock()
		var err error
		if compact {
			err = w.rewrite(keep)
		} else {
			err = w.write(data)
		}
		w.mu.Lock()
		w.flushing = false
		if err != nil {
			w.err = fmt.Errorf("bolt: sending journal: %v: %w", err, store.ErrUnavailable)
		} else {
			w.flushed = batch
		}
		w.cond.Broadcast()
	}
	return w.err
}

// unsettled renders the records still needed; w.mu is held.
func (w *workerJournal) unsettled() []byte {
	var b []byte
	for k, n := range w.open {
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ' ')
		b = append(b, k...)
		b = append(b, '\n')
	}
	return b
}

// write appends data and syncs it; only the flushing caller runs it.
func (w *workerJournal) write(data []byte) error {
	if _, err := w.f.Write(data); err != nil {
		return err
	}
	if !w.j.noSync {
		if err := datasync(w.f); err != nil {
			return err
		}
	}
	_, err := w.f.Write(okLine)
	w.size += int64(len(data) + len(okLine))
	return err
}

// rewrite replaces the file with keep (every unsettled record, those of
// the current batch included): written and synced under a temporary name,
// renamed over the old file, directory synced.
func (w *workerJournal) rewrite(keep []byte) error {
	p := w.j.path(w.worker)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	keep = append(w.j.header(), keep...)
	if _, err = f.Write(keep); err == nil && !w.j.noSync {
		err = datasync(f)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err == nil && !w.j.noSync {
		err = syncDir(w.j.dir)
	}
	if err == nil {
		_, err = f.Write(okLine)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	_ = w.f.Close()
	w.f, w.size = f, int64(len(keep)+len(okLine))
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

// read returns a dead worker's records: whether it had opened a journal,
// and per key the attempts recorded. A torn last line (the write that a
// crash interrupted, never synced, so never followed by a send) is
// ignored.
//
// Reading closes the journal for good if its worker is open in this
// process after all (a worker only slow, not dead): once any flush under
// way has ended, it records nothing more, so it sends nothing more.
func (j *journal) read(worker string) (opened bool, sent map[string][]int, err error) {
	j.mu.Lock()
	w := j.workers[worker]
	j.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("bolt: sending journal of %q: recovered as stopped: %w", worker, store.ErrLeaseLost)
		}
		for w.flushing {
			w.cond.Wait()
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
	sent = map[string][]int{}
	var unconfirmed []store.AttemptRef // records after the last "ok"
	sameBoot := false
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1] // a torn last line: its write never completed, nothing was sent after it
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "ok" {
			for _, r := range unconfirmed {
				sent[r.Key] = append(sent[r.Key], r.N)
			}
			unconfirmed = unconfirmed[:0]
			continue
		}
		n, key, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if n == "boot" {
			sameBoot = j.boot != "" && key == j.boot
			continue
		}
		a, err := strconv.Atoi(n)
		if err != nil || key == "" {
			continue
		}
		unconfirmed = append(unconfirmed, store.AttemptRef{Key: key, N: a})
	}
	if !sameBoot { // the "ok" after them may be what a power loss took
		for _, r := range unconfirmed {
			sent[r.Key] = append(sent[r.Key], r.N)
		}
	}
	return true, sent, sc.Err()
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
