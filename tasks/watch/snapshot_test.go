package watch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func fullSnapshot() *Snapshot {
	zone := time.FixedZone("CST", 8*3600)
	return &Snapshot{
		Version: SnapshotVersion,
		Items: map[string]Entry{
			"guid-1": {
				Digest: "d1", Title: "Problem set 3", URL: "https://lms.example.edu/a/3",
				Due: time.Date(2026, 12, 3, 23, 59, 0, 0, zone), Done: true,
				Alt:      []string{"https://lms.example.edu/a/3", "problem set 3"},
				Reminded: []time.Duration{24 * time.Hour, 72 * time.Hour},
			},
			"guid-2": {Digest: "d2", Title: "新闻"},
		},
		Tombstones: map[string]Entry{
			"guid-0": {Digest: "d0", Title: "Old", Removed: time.Date(2026, 11, 28, 1, 2, 3, 4, time.UTC)},
		},
		Validators: Conditional{ETag: `W/"abc"`, LastModified: "Sat, 28 Nov 2026 10:00:00 GMT"},
		Baselined:  true,
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	want := fullSnapshot()
	b := mustEncode(t, want)
	got, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	// Times decode into a fixed zone of the same offset: compare instants.
	for k, w := range want.Items {
		g := got.Items[k]
		if !g.Due.Equal(w.Due) {
			t.Fatalf("%s due %v, want %v", k, g.Due, w.Due)
		}
		g.Due, w.Due = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: %+v, want %+v", k, g, w)
		}
	}
	if !got.Tombstones["guid-0"].Removed.Equal(want.Tombstones["guid-0"].Removed) ||
		got.Validators != want.Validators || !got.Baselined || got.Version != SnapshotVersion {
		t.Fatalf("%+v", got)
	}
	if again := mustEncode(t, got); !bytes.Equal(again, b) {
		t.Fatalf("re-encoding differs:\n%s\n%s", b, again)
	}
}

func TestSnapshotEncodingIsDeterministic(t *testing.T) {
	a, b := mustEncode(t, fullSnapshot()), mustEncode(t, fullSnapshot())
	if !bytes.Equal(a, b) {
		t.Fatal("equal snapshots encode differently")
	}
}

func TestDecodeSnapshot(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantNil bool
		wantErr error
	}{
		{name: "empty", in: "", wantNil: true},
		{name: "minimal", in: `{"version":1}`},
		{name: "null maps", in: `{"version":1,"items":null,"tombstones":null}`},
		{name: "newer version", in: `{"version":2,"items":{}}`, wantErr: ErrSnapshotVersion},
		{name: "no version", in: `{"items":{}}`, wantErr: ErrSnapshotCorrupt},
		{name: "not json", in: "\x00\x01", wantErr: ErrSnapshotCorrupt},
		{name: "wrong shape", in: `{"version":1,"items":[1,2]}`, wantErr: ErrSnapshotCorrupt},
		{name: "bad time", in: `{"version":1,"items":{"a":{"due":"tomorrow"}}}`, wantErr: ErrSnapshotCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeSnapshot([]byte(tc.in))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if (s == nil) != tc.wantNil {
				t.Fatalf("snapshot %+v", s)
			}
			if s != nil && (s.Items == nil || s.Tombstones == nil) {
				t.Fatal("maps not initialised")
			}
		})
	}
	if s, err := DecodeSnapshot(nil); s != nil || err != nil {
		t.Fatalf("nil input: %v %v", s, err)
	}
	if _, err := (*Snapshot)(nil).Encode(); err == nil {
		t.Fatal("nil snapshot encoded")
	}
}

// TestSnapshotTestdataDecodes keeps the checked-in snapshot (the version-1
// format as stored) readable.
func TestSnapshotTestdataDecodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "snapshot-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := s.Items["guid-1"]
	if !ok || e.Title != "Problem set 3" || len(e.Reminded) != 2 || !s.Baselined {
		t.Fatalf("%+v", s)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"version":1,"items":{"a":{"digest":"x","due":"2026-12-01T00:00:00Z","reminded":[3600000000000]}},"baselined":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil || s == nil {
			return
		}
		enc, err := s.Encode()
		if err != nil {
			t.Fatalf("decoded snapshot does not encode: %v", err)
		}
		s2, err := DecodeSnapshot(enc)
		if err != nil {
			t.Fatalf("encoded snapshot does not decode: %v", err)
		}
		enc2, err := s2.Encode()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %v\n%s\n%s", err, enc, enc2)
		}
		// A decoded snapshot is usable as prev.
		Compute(s, feed(3), t0, Options{RemindBefore: []time.Duration{time.Hour}})
		Reminders(s, t0, Options{RemindBefore: []time.Duration{time.Hour}})
	})
}
