package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// writeV1 builds a schema-1 file the way the schema-1 ledger laid it out:
// whole effect records under their keys, the queue keyed by
// notBefore/seq/key, the task index task/seq -> key, in-flight key -> worker.
func writeV1(t *testing.T, path string, effects []v1Effect) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucket(bktMeta)
		if err != nil {
			return err
		}
		if err := migrations[0](tx); err != nil {
			return err
		}
		fxs := tx.Bucket(bktEffects)
		var top uint64
		for _, r := range effects {
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := fxs.Put([]byte(r.Key), v); err != nil {
				return err
			}
			top = max(top, r.Seq)
			tk := append(append([]byte(r.TaskID), 0), u64(r.Seq)...)
			if err := tx.Bucket(bktByTask).Put(tk, []byte(r.Key)); err != nil {
				return err
			}
			switch {
			case r.State == store.Pending && r.InFlight:
				err = tx.Bucket(bktInFlight).Put([]byte(r.Key), []byte(r.Worker))
			case r.State == store.Pending:
				qk := append(append(u64(nanos(r.NotBefore)), u64(r.Seq)...), r.Key...)
				err = tx.Bucket(bktQueue).Put(qk, nil)
			}
			if err != nil {
				return err
			}
		}
		if err := fxs.SetSequence(top); err != nil {
			return err
		}
		return meta.Put(keySchema, u64(1))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrationV1SplitsEffects(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	queued := store.Effect{Key: "k-queued", TaskID: "t1", Recipient: "telegram:chat:1", Kind: "watch.changed",
		Payload: []byte(`{"title":"a"}`), State: store.Pending, NotBefore: base.Add(time.Minute),
		ExpiresAt: base.Add(time.Hour), CreatedAt: base, UpdatedAt: base, RunID: "r1", PartsSent: 1}
	flying := store.Effect{Key: "k-flying", TaskID: "t1", Recipient: "webhook:ops", Kind: "inbound.event",
		Payload: []byte(`{"title":"b"}`), State: store.Pending, InFlight: true, Worker: "w-dead",
		Attempts:  []store.Attempt{{N: 1, Start: base, By: "w-dead", Outcome: store.Pending}},
		NotBefore: base, CreatedAt: base, UpdatedAt: base}
	done := store.Effect{Key: "k-done", TaskID: "t2", Recipient: "inbox:ann", Kind: "test",
		State: store.Completed, ProviderID: "m-1", NotBefore: base, CreatedAt: base, UpdatedAt: base,
		Attempts: []store.Attempt{{N: 1, Start: base, End: base, By: "w", Outcome: store.Completed}}}
	path := filepath.Join(t.TempDir(), "herald.db")
	writeV1(t, path, []v1Effect{{queued, 1}, {flying, 2}, {done, 3}})

	s, err := Open(path, Options{Now: func() time.Time { return base }})
	if err != nil {
		t.Fatalf("Open v1 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	l := s.Ledger()
	for _, want := range []store.Effect{queued, flying, done} {
		got, err := l.Get(ctx, want.Key)
		if err != nil {
			t.Fatalf("Get %s: %v", want.Key, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("migrated %s:\n got %+v\nwant %+v", want.Key, got, want)
		}
	}
	due, err := l.Due(ctx, base.Add(time.Hour), 0)
	if err != nil || len(due) != 1 || due[0].Key != queued.Key {
		t.Fatalf("Due after migration = %v, %v; want only %s", due, err, queued.Key)
	}
	if at, ok, err := l.NextDue(ctx); err != nil || !ok || !at.Equal(queued.NotBefore) {
		t.Fatalf("NextDue = %v %v %v", at, ok, err)
	}
	rec, err := l.Recover(ctx, store.Recovery{}, base)
	if err != nil || len(rec) != 1 || rec[0].Key != flying.Key || rec[0].State != store.Unknown {
		t.Fatalf("Recover after migration = %+v, %v", rec, err)
	}
	// New claims continue the sequence: newest first in the task listing.
	res, err := l.Commit(ctx, store.RunCommit{TaskID: "t1", Effects: []store.Effect{{Key: "k-new"}, {Key: queued.Key}}})
	if err != nil || len(res.Claimed) != 1 || len(res.Duplicates) != 1 {
		t.Fatalf("Commit after migration = %+v, %v", res, err)
	}
	list, err := l.List(ctx, "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range list {
		keys = append(keys, e.Key)
	}
	if want := []string{"k-new", "k-flying", "k-queued"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("List t1 = %v, want %v", keys, want)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bktMeta).Get(keySchema); binaryU64(v) != SchemaVersion {
			t.Errorf("schema after migration = %d", binaryU64(v))
		}
		for _, b := range [][]byte{bktEffects, bktQueue, bktByTask, bktInFlight} {
			if tx.Bucket(b) != nil {
				t.Errorf("schema 1 bucket %s kept", b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrationV1CorruptRecordLeavesFileOnV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	writeV1(t, path, []v1Effect{{store.Effect{Key: "k", TaskID: "t", State: store.Completed}, 0}})
	if _, err := Open(path, Options{}); !errors.Is(err, errCorruptEffect) {
		t.Fatalf("Open with a corrupt v1 record: %v", err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.View(func(tx *bbolt.Tx) error {
		if v := binaryU64(tx.Bucket(bktMeta).Get(keySchema)); v != 1 {
			t.Errorf("schema after a failed migration = %d, want 1", v)
		}
		if tx.Bucket(bktEffects) == nil || tx.Bucket(bktFxBody) != nil {
			t.Error("failed migration left a partial layout")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeBody: stored bodies never panic the reader, and whatever
// decodes is stable: encoding it and decoding again yields the same bytes.
func FuzzDecodeBody(f *testing.F) {
	for _, p := range [][]byte{nil, {}, []byte(`{"title":"x"}`)} {
		v, err := encodeBody(effectBody{Key: "k", TaskID: "t", Recipient: "r", Kind: "test"}, p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Add([]byte{0x05, '{', '}'})
	f.Fuzz(func(t *testing.T, v []byte) {
		b, p, err := decodeBody(v)
		if err != nil {
			return
		}
		enc, err := encodeBody(b, p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		b2, p2, err := decodeBody(enc)
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if again, _ := encodeBody(b2, p2); !bytes.Equal(again, enc) {
			t.Fatalf("round trip: %+v %q -> %+v %q", b, p, b2, p2)
		}
	})
}

// TestMigrationV3InboxIDsBecomeShortNumbers: an inbox written with
// hexadecimal ids is rewritten to decimal ones on open, keeping its order,
// its read marks and its dedup by effect key, so chat can show item 10 as
// "/read 10".
func TestMigrationV3InboxIDsBecomeShortNumbers(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := Open(path, Options{Now: func() time.Time { return base }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 12; i++ {
		if _, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "ann", EffectKey: fmt.Sprintf("k%d", i), Title: fmt.Sprintf("n%d", i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Inbox().MarkRead(ctx, "ann", inboxID(11)); err != nil {
		t.Fatal(err)
	}
	// Lay the inbox out as schema 3 did: hexadecimal ids.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		p := tx.Bucket(bktInbox).Bucket([]byte("ann"))
		items, keys := p.Bucket(bktItems), p.Bucket(bktKeys)
		for seq := uint64(1); seq <= 12; seq++ {
			v := items.Get([]byte(inboxID(seq)))
			var it store.InboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			if err := items.Delete([]byte(inboxID(seq))); err != nil {
				return err
			}
			it.ID = fmt.Sprintf("%016x", seq)
			nv, _ := json.Marshal(it)
			if err := items.Put([]byte(it.ID), nv); err != nil {
				return err
			}
			if err := keys.Put([]byte(it.EffectKey), []byte(it.ID)); err != nil {
				return err
			}
		}
		return tx.Bucket(bktMeta).Put(keySchema, u64(3))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{Now: func() time.Time { return base }})
	if err != nil {
		t.Fatalf("Open schema 3 file: %v", err)
	}
	defer func() { _ = s.Close() }()
	list, err := s.Inbox().List(ctx, "ann", store.InboxQuery{Limit: 50})
	if err != nil || len(list) != 12 {
		t.Fatalf("List = %d items, %v", len(list), err)
	}
	for i, it := range list {
		seq := 12 - i
		if it.ID != inboxID(uint64(seq)) || it.Title != fmt.Sprintf("n%d", seq) || it.Read != (seq == 11) {
			t.Errorf("item %d = %+v, want id %s titled n%d", i, it, inboxID(uint64(seq)), seq)
		}
	}
	res, err := s.Inbox().Append(ctx, store.InboxItem{Principal: "ann", EffectKey: "k10", Title: "again"}, 0)
	if err != nil || res.Item.ID != inboxID(10) || res.Item.Title != "n10" {
		t.Errorf("a second append of k10 = %+v, %v; want the migrated item 10", res.Item, err)
	}
}
