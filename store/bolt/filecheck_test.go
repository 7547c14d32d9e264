package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// filledStore writes a store with tasks, effects in several states, an
// inbox and a history log to dir/herald.db, closes it and returns its path.
func filledStore(t *testing.T, dir string, effects int) string {
	t.Helper()
	path := filepath.Join(dir, "herald.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var puts []store.CatalogPut
	for i := range effects / 4 {
		puts = append(puts, store.CatalogPut{ID: fmt.Sprintf("task-%05d", i), Value: []byte(`{"name":"a task","schedule":"every 1h"}`)})
	}
	if _, err := s.Catalog().(*catalog).PutAll(ctx, store.Fence{}, puts); err != nil {
		t.Fatal(err)
	}
	var es []store.Effect
	for i := range effects {
		es = append(es, benchEffect(int64(i)))
	}
	if _, err := s.Ledger().Commit(ctx, store.RunCommit{TaskID: "t", Effects: es}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "telegram:1", EffectKey: benchKey(0), Title: "hello", Body: []byte(`{}`)}, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History().Append(ctx, store.Turn{Log: "telegram:1", Principal: "telegram:1", Text: "watch the library feed", Terms: []string{"library", "feed"}}, 10, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// metaOf reads the meta page bbolt would use.
func metaOf(t testing.TB, path string) fileMeta {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	m, err := (&checker{f: f, path: path, size: info.Size()}).meta()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func damageKind(t *testing.T, err error) string {
	t.Helper()
	var d *DamagedError
	if !errors.As(err, &d) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("want a DamagedError, got %v", err)
	}
	return d.Kind
}

// openUnchanged opens path and checks the file's bytes did not change.
func openUnchanged(t *testing.T, path string) error {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{NoSync: true})
	if err == nil {
		_ = s.Close()
		return nil
	}
	after, rerr := os.ReadFile(path)
	if rerr != nil || !bytes.Equal(before, after) {
		t.Fatalf("a refused open changed the file (%v)", rerr)
	}
	return err
}

// TestOpen_RefusesATruncatedFile: a file cut inside its pages is refused
// as truncated, before bbolt maps it (which would fault on the missing
// pages), and left as it was.
func TestOpen_RefusesATruncatedFile(t *testing.T) {
	path := filledStore(t, t.TempDir(), 3000)
	m := metaOf(t, path)
	if err := os.Truncate(path, int64(m.hwm*m.pageSize)-64<<10); err != nil {
		t.Fatal(err)
	}
	err := openUnchanged(t, path)
	if kind := damageKind(t, err); kind != DamageTruncated {
		t.Fatalf("kind %q: %v", kind, err)
	}
	t.Log(err)
}

// TestOpen_ACutThroughUnusedSpaceIsNoDamage: bbolt grows the file ahead of
// its pages; losing only that space loses nothing, and the store opens.
func TestOpen_ACutThroughUnusedSpaceIsNoDamage(t *testing.T) {
	path := filledStore(t, t.TempDir(), 100)
	m := metaOf(t, path)
	if err := os.Truncate(path, int64(m.hwm*m.pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := openUnchanged(t, path); err != nil {
		t.Fatal(err)
	}
}

// TestOpen_RefusesScrambledLastPages: random bytes over the last pages in
// use are refused as corrupt (bbolt itself panics on them, in a goroutine
// of its own) and the file is left as it was.
func TestOpen_RefusesScrambledLastPages(t *testing.T) {
	path := filledStore(t, t.TempDir(), 3000)
	m := metaOf(t, path)
	data, _ := os.ReadFile(path)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := (m.hwm - 8) * m.pageSize; i < m.hwm*m.pageSize; i++ {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	err := openUnchanged(t, path)
	if kind := damageKind(t, err); kind != DamageCorrupt {
		t.Fatalf("kind %q: %v", kind, err)
	}
	t.Log(err)
}

func TestOpen_RefusesAnEmptyFileAndOneThatIsNoStore(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if kind := damageKind(t, openUnchanged(t, empty)); kind != DamageTruncated {
		t.Fatalf("empty file: %q", kind)
	}
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("herald"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if kind := damageKind(t, openUnchanged(t, junk)); kind != DamageNotStore {
		t.Fatalf("junk: %q", kind)
	}
}

// TestOpen_NeverCrashesOnADamagedPage damages each page of a store in
// turn, two ways (all random; header kept, contents random), and opens
// it: a page the store uses is always refused, and nothing crashes.
func TestOpen_NeverCrashesOnADamagedPage(t *testing.T) {
	dir := t.TempDir()
	path := filledStore(t, dir, 600)
	m := metaOf(t, path)
	good, _ := os.ReadFile(path)
	good = good[:m.hwm*m.pageSize] // without the space bbolt grew the file by ahead of its pages
	f, _ := os.Open(path)
	info, _ := f.Stat()
	c := &checker{f: f, path: path, size: info.Size(), pageSize: m.pageSize, hwm: m.hwm, seen: make([]uint64, (m.hwm+63)/64)}
	if err := c.bucket(m.root, 0, text("test")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	bad := filepath.Join(dir, "bad.db")
	refused := 0
	for id := uint64(2); id < m.hwm; id++ {
		used := c.seen[id/64]&(1<<(id%64)) != 0
		for _, keep := range []uint64{0, pageHeaderSize} {
			data := bytes.Clone(good)
			for i := id*m.pageSize + keep; i < (id+1)*m.pageSize; i++ {
				data[i] = byte(rng.Uint32())
			}
			if err := os.WriteFile(bad, data, 0o600); err != nil {
				t.Fatal(err)
			}
			err := openUnchanged(t, bad)
			if err != nil {
				damageKind(t, err)
				refused++
			} else if used && keep == 0 {
				t.Errorf("page %d is in use, and a store with it scrambled opened", id)
			}
		}
	}
	t.Logf("%d pages, %d damaged files refused", m.hwm-2, refused)
}

// TestRestore_ChecksTheWholeCopy: a snapshot cut in half, one with a
// scrambled page and one whose records do not decode are refused, and
// nothing is left at the path or beside it.
func TestRestore_ChecksTheWholeCopy(t *testing.T) {
	src := filledStore(t, t.TempDir(), 3000)
	s, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := s.Backup(context.Background(), &snap); err != nil {
		t.Fatal(err)
	}
	s.Close()
	whole := snap.Bytes()
	scrambled := bytes.Clone(whole)
	ps := int(metaOf(t, src).pageSize)
	for i := len(scrambled) - 4*ps; i < len(scrambled); i++ {
		scrambled[i] ^= 0x5a
	}
	badRecord := filepath.Join(t.TempDir(), "bad-record.db")
	if err := os.WriteFile(badRecord, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(badRecord, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bktFxState).Put(seqKey(1), []byte{recordFormat, 0xff}) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	undecodable, _ := os.ReadFile(badRecord)
	for name, snap := range map[string][]byte{
		"cut in half": whole[:len(whole)/2],
		"scrambled":   scrambled,
		"bad record":  undecodable,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "herald.db")
			err := Restore(path, bytes.NewReader(snap))
			damageKind(t, err)
			t.Log(err)
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("left behind: %v", ents)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "herald.db")
	if err := Restore(path, bytes.NewReader(whole)); err != nil {
		t.Fatalf("the whole snapshot: %v", err)
	}
}

// TestRestore_ReplacesTheCopyOfAStoppedRestore: the copy a killed restore
// left does not block the next one.
func TestRestore_ReplacesTheCopyOfAStoppedRestore(t *testing.T) {
	src := filledStore(t, t.TempDir(), 100)
	whole, _ := os.ReadFile(src)
	dir := t.TempDir()
	path := filepath.Join(dir, "herald.db")
	if err := os.WriteFile(RestoringPath(path), whole[:len(whole)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(newJournal(RestoringPath(path)).dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Restore(path, bytes.NewReader(whole)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "herald.db" {
		t.Fatalf("data dir holds %v", ents)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if recs, err := s.Catalog().List(context.Background()); err != nil || len(recs) != 25 {
		t.Fatalf("restored catalog: %d records, %v", len(recs), err)
	}
}

// TestOpen_AfterAStoppedRestore: with only a stopped restore's copy there,
// Open creates no store beside it; with a store there too, Open keeps the
// store and names the copy; a copy that already is the store (stopped
// after its link) is tidied away.
func TestOpen_AfterAStoppedRestore(t *testing.T) {
	src := filledStore(t, t.TempDir(), 100)
	whole, _ := os.ReadFile(src)

	dir := t.TempDir()
	path := filepath.Join(dir, "herald.db")
	tmp := RestoringPath(path)
	if err := os.WriteFile(tmp, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrInterruptedRestore) {
		t.Fatalf("only the copy: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a store was created beside the copy: %v", err)
	}

	if err := os.WriteFile(path, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Leftover() != tmp {
		t.Errorf("Leftover %q, want %q", s.Leftover(), tmp)
	}
	s.Close()
	if got, _ := os.ReadFile(tmp); !bytes.Equal(got, whole[:len(whole)/2]) {
		t.Error("the copy was changed")
	}

	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, tmp); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s.Leftover() != "" {
		t.Errorf("Leftover %q after a finished switch", s.Leftover())
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the second name of a finished switch is still there: %v", err)
	}
}

// BenchmarkStartCheck100k measures what a start costs on a store of
// 100,000 effects and 100,000 tasks: the structure check Open runs
// first, bbolt's own open (which walks every page to rebuild the
// freelist), bbolt's consistency check, and the whole Open.
func BenchmarkStartCheck100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "herald.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	preload(b, s, 0, 100000)
	task := []byte(`{"name":"a task","source":{"kind":"rss","url":"https://example.edu/feed.xml"},"schedule":"every 1h","notify":["ada"]}`)
	for i := 0; i < 100000; i += 1000 {
		var puts []store.CatalogPut
		for j := i; j < i+1000; j++ {
			puts = append(puts, store.CatalogPut{ID: fmt.Sprintf("task-%07d", j), Value: task})
		}
		if _, err := s.Catalog().(*catalog).PutAll(context.Background(), store.Fence{}, puts); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	m := metaOf(b, path)
	b.Logf("%d pages, %d MiB", m.hwm, m.hwm*m.pageSize>>20)
	b.Run("CheckFile", func(b *testing.B) {
		for range b.N {
			if err := checkFile(path, time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bboltOpen", func(b *testing.B) {
		for range b.N {
			db, err := bbolt.Open(path, 0o600, &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, InitialMmapSize: initialMmapSize})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("TxCheck", func(b *testing.B) {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for range b.N {
			_ = db.View(func(tx *bbolt.Tx) error {
				for err := range tx.Check() {
					b.Error(err)
				}
				return nil
			})
		}
	})
	b.Run("Open", func(b *testing.B) {
		for range b.N {
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
