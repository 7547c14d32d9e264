package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store/backup"
	"github.com/herald-bridge/herald/store/bolt"
)

// seededStore is a data dir herald served once, grown with bulk dialog
// state through the store's own code, and its offline backup.
type seededStore struct {
	cfg, dataDir, backup string
	snapshot             []byte // the backup's store file: pages up to its last, nothing grown ahead
	entries              int
}

// seedStore makes a seededStore whose store holds entries values of size
// bytes each.
func seedStore(t *testing.T, entries, size int) *seededStore {
	t.Helper()
	s := &seededStore{
		cfg:     writeConfig(t, adjustExample(t, freeAddr(t), nil)),
		dataDir: filepath.Join(t.TempDir(), "data"),
		backup:  filepath.Join(t.TempDir(), "herald-backup.zip"),
		entries: entries,
	}
	p := startServeAt(t, s.cfg, s.dataDir)
	if c := p.signal(syscall.SIGTERM); c != 0 {
		t.Fatalf("herald serve exited %d", c)
	}
	st, err := bolt.Open(filepath.Join(s.dataDir, "herald.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	for i := range entries {
		v := make([]byte, size)
		for j := range v {
			v[j] = "abcdefghijklmnopqrstuvwxyz0123456789 "[rng.IntN(37)]
		}
		if err := st.Dialogs().Put(ctx, fmt.Sprintf("bulk:%06d", i), v, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := run(t, "backup", "--out", s.backup, "--config", s.cfg, "--data-dir", s.dataDir); code != 0 {
		t.Fatalf("offline backup: exit %d\n%s%s", code, out, errOut)
	}
	r, err := backup.Open(s.backup)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if s.snapshot, err = io.ReadAll(rc); err != nil {
		t.Fatal(err)
	}
	return s
}

// entriesIn counts the bulk entries of the store at path.
func entriesIn(t *testing.T, path string, want int) {
	t.Helper()
	st, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, i := range []int{0, want / 2, want - 1} {
		if v, err := st.Dialogs().Get(context.Background(), fmt.Sprintf("bulk:%06d", i)); err != nil || len(v) == 0 {
			t.Fatalf("entry %d of the store: %v", i, err)
		}
	}
}

// serveRefused runs `herald serve` on dataDir, bounded, and returns its
// output and exit code.
func serveRefused(t *testing.T, cfg, dataDir string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, "serve", "--config", cfg, "--data-dir", dataDir)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("herald serve still ran after %v; it should have refused the store\n%s", startBound, out)
	}
	return string(out), exitCode(err)
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// noCrash fails when output shows a panic or a stack dump.
func noCrash(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "fatal error", "SIGBUS", "unexpected fault"} {
		if strings.Contains(out, s) {
			t.Fatalf("output shows %q:\n%s", s, out)
		}
	}
}

// namesIn lists a directory.
func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestDamagedStore_ServeStopsWithAClassifiedMessage: a store file whose
// last 64 KiB are cut off, one whose last pages are random, and one cut
// in half each make `herald serve` exit 1 with a message that says what
// is damaged and what to do, and a log line classed damaged_store; no
// panic or stack dump, and the file is byte for byte what it was.
func TestDamagedStore_ServeStopsWithAClassifiedMessage(t *testing.T) {
	seed := seedStore(t, 300, 2000)
	const pageSize = 4096
	cases := []struct {
		name, kind string
		damage     func([]byte) []byte
	}{
		{"last 64 KiB cut", "truncated", func(b []byte) []byte { return b[:len(b)-64<<10] }},
		{"last pages random", "corrupt", func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(9, 10))
			for i := len(b) - 8*pageSize; i < len(b); i++ {
				b[i] = byte(rng.Uint32())
			}
			return b
		}},
		{"cut in half", "truncated", func(b []byte) []byte { return b[:len(b)/2] }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dataDir, "herald.db")
			if err := os.WriteFile(path, c.damage(bytes.Clone(seed.snapshot)), 0o600); err != nil {
				t.Fatal(err)
			}
			before := digest(t, path)
			out, code := serveRefused(t, seed.cfg, dataDir)
			t.Logf("exit %d\n%s", code, out)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d", code, exitFailure)
			}
			noCrash(t, out)
			for _, want := range []string{
				"herald: open the store: the store file " + path + " is damaged (" + c.kind + ":",
				"herald changed nothing in the file",
				"herald restore BACKUP --data-dir NEW_DIR",
				`"class":"damaged_store"`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q", want)
				}
			}
			if digest(t, path) != before {
				t.Error("the damaged file was changed")
			}
			if names := namesIn(t, dataDir); strings.Join(names, " ") != ".lock herald.db" {
				t.Errorf("the data dir holds %v", names)
			}
		})
	}
}

// TestRestore_RefusesABackupWhoseStoreIsCutInHalf: restore checks the
// copy before it switches: a backup whose store is cut in half is
// refused with exit 1 and the code damaged_store, without a panic, and
// leaves nothing in the data dir; the backup is unchanged.
func TestRestore_RefusesABackupWhoseStoreIsCutInHalf(t *testing.T) {
	seed := seedStore(t, 100, 2000)
	half := filepath.Join(t.TempDir(), "half-backup.zip")
	f, err := os.OpenFile(half, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	err = backup.Write(f, backup.Manifest{Created: time.Now(), Herald: "test", Driver: "bolt"}, func(w io.Writer) error {
		_, err := w.Write(seed.snapshot[:len(seed.snapshot)/2])
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	before := digest(t, half)
	dataDir := filepath.Join(t.TempDir(), "data")
	out, errOut, code := run(t, "restore", half, "--config", seed.cfg, "--data-dir", dataDir, "--json")
	t.Logf("exit %d\n%s%s", code, out, errOut)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d", code, exitFailure)
	}
	noCrash(t, out+errOut)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Code != "damaged_store" ||
		!strings.Contains(e.Error.Message, "is damaged (truncated:") || !strings.Contains(e.Error.Message, "Nothing was restored") {
		t.Fatalf("stderr is not the classified error: %v\n%s", err, errOut)
	}
	if names := namesIn(t, dataDir); strings.Join(names, " ") != ".lock" {
		t.Errorf("the data dir holds %v", names)
	}
	if digest(t, half) != before {
		t.Error("the backup was changed")
	}
}

// TestRestore_AKilledRestoreIsExplainedAndRetried kills a real `herald
// restore` (SIGKILL) while its copy is being written and checked. Then:
// serve keeps the data dir as it was before the restore (no store, and
// no empty one is created beside the copy), exits 1 and says what
// happened and what to do; restoring again is not blocked by the copy
// and gives the whole store, which serves. A store with a stopped
// restore's copy beside it is served and the copy is reported.
func TestRestore_AKilledRestoreIsExplainedAndRetried(t *testing.T) {
	seed := seedStore(t, 8000, 4000) // about 40 MB: the copy and its check take a moment
	dataDir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dataDir, "herald.db")
	leftover := path + ".restoring"

	// Killed while the copy is written, then again once it is whole and
	// being checked: each leaves the copy and no store.
	var left []byte
	for _, at := range []int64{1, int64(len(seed.snapshot))} {
		left = killRestore(t, seed, dataDir, at)
		if _, err := os.Stat(path); err == nil {
			t.Fatal("the killed restore switched already; make the backup larger")
		}
		t.Logf("killed with a copy of %d of %d bytes", len(left), len(seed.snapshot))
	}

	// serve: no store is started beside the copy; the message says what
	// happened and how to go on.
	srvOut, code := serveRefused(t, seed.cfg, dataDir)
	t.Logf("serve after the killed restore: exit %d\n%s", code, srvOut)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d", code, exitFailure)
	}
	noCrash(t, srvOut)
	for _, want := range []string{
		"a herald restore was stopped before it finished: it left " + leftover + " and no store " + path,
		"herald restore BACKUP --data-dir " + dataDir,
		"or remove " + leftover + " to start with an empty store",
		`"class":"interrupted_restore"`,
	} {
		if !strings.Contains(srvOut, want) {
			t.Errorf("serve's output lacks %q", want)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("serve created a store beside the copy")
	}
	if got, _ := os.ReadFile(leftover); !bytes.Equal(got, left) {
		t.Fatal("serve changed the copy")
	}

	// restore again: the copy does not block it.
	if o, e, code := run(t, "restore", seed.backup, "--config", seed.cfg, "--data-dir", dataDir); code != 0 {
		t.Fatalf("restore after the killed one: exit %d\n%s%s", code, o, e)
	}
	if names := namesIn(t, dataDir); strings.Join(names, " ") != ".lock herald.db" {
		t.Fatalf("after the restore the data dir holds %v", names)
	}
	p := startServeAt(t, seed.cfg, dataDir)
	if c := p.signal(syscall.SIGTERM); c != 0 {
		t.Fatalf("herald serve exited %d", c)
	}
	entriesIn(t, path, seed.entries)

	// A store with a stopped restore's copy beside it: the store serves,
	// the copy is named with what to do, and both stay as they are.
	if err := os.WriteFile(leftover, left, 0o600); err != nil {
		t.Fatal(err)
	}
	p = startServeAt(t, seed.cfg, dataDir)
	if c := p.signal(syscall.SIGTERM); c != 0 {
		t.Fatalf("herald serve exited %d", c)
	}
	log := p.log.String()
	for _, want := range []string{`"class":"interrupted_restore"`, `"leftover":"` + leftover + `"`, "herald serves the store it had", `"todo":"remove ` + leftover} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, log)
		}
	}
	entriesIn(t, path, seed.entries)
	if got, _ := os.ReadFile(leftover); !bytes.Equal(got, left) {
		t.Fatal("serve changed the copy beside the store")
	}
}

// killRestore starts `herald restore` of seed's backup into dataDir,
// SIGKILLs it once its copy holds at least size bytes, and returns what
// the copy holds then.
func killRestore(t *testing.T, seed *seededStore, dataDir string, size int64) []byte {
	t.Helper()
	leftover := filepath.Join(dataDir, "herald.db.restoring")
	cmd := exec.Command(heraldBin, "restore", seed.backup, "--config", seed.cfg, "--data-dir", dataDir)
	cmd.Env = childEnv()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(startBound)
	for {
		if st, err := os.Stat(leftover); err == nil && st.Size() >= size {
			break
		}
		select {
		case <-done:
			t.Fatalf("the restore ended before its copy held %d bytes; make the backup larger\n%s", size, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restore's copy held less than %d bytes after %v\n%s", size, startBound, out.String())
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	left, err := os.ReadFile(leftover)
	if err != nil {
		t.Fatalf("the killed restore left no copy: %v", err)
	}
	return left
}
