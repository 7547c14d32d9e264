package bolt

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

func TestEffectCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 8, 0, 0, 123, time.UTC)
	east := time.Date(2026, 11, 30, 16, 0, 0, 0, time.FixedZone("", 8*3600))
	tests := []struct {
		name    string
		body    effectBody
		payload []byte
		st      effectState
	}{
		{name: "zero"},
		{name: "empty payload", payload: []byte{}, st: effectState{State: store.Pending}},
		{name: "held", st: effectState{State: store.Pending, NotBefore: at, Error: "held", Holds: 3}},
		{
			name:    "full",
			body:    effectBody{Key: "fx_1", TaskID: "hook:ci", Recipient: "webhook:ops", Kind: "inbound.event", CreatedAt: at, RunID: "hook:ci/1"},
			payload: []byte(`{"title":"build failed"}`),
			st: effectState{State: store.Pending, InFlight: true, Worker: "w-1", NotBefore: at, ExpiresAt: east,
				UpdatedAt: at, Error: "retry: 429", ProviderID: "m-1", PartsSent: 2,
				Attempts: []store.Attempt{
					{N: 1, Start: at, End: at, Part: 1, By: "w-0", Outcome: store.Pending, Error: "429"},
					{N: 2, Start: east, Part: 2, By: "w-1", Outcome: store.Pending},
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := encodeBody(tt.body, tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			b, p, err := decodeBody(v)
			if err != nil || !reflect.DeepEqual(b, tt.body) || !reflect.DeepEqual(p, tt.payload) {
				t.Fatalf("body round trip: %+v %q %v", b, p, err)
			}
			st, err := decodeState(encodeState(tt.st))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st, tt.st) {
				t.Fatalf("state round trip:\n got %+v\nwant %+v", st, tt.st)
			}
		})
	}
}

func TestEffectCodecRefusesDamage(t *testing.T) {
	body, _ := encodeBody(effectBody{Key: "k", TaskID: "t"}, []byte("p"))
	state := encodeState(effectState{State: store.Completed, Attempts: []store.Attempt{{N: 1, By: "w"}}})
	tests := []struct {
		name   string
		decode func() error
	}{
		{"empty body", func() error { _, _, err := decodeBody(nil); return err }},
		{"truncated body", func() error { _, _, err := decodeBody(body[:4]); return err }},
		{"newer body format", func() error {
			_, _, err := decodeBody(append([]byte{recordFormat + 1}, body[1:]...))
			return err
		}},
		{"empty state", func() error { _, err := decodeState(nil); return err }},
		{"truncated state", func() error { _, err := decodeState(state[:len(state)-2]); return err }},
		{"trailing state", func() error { _, err := decodeState(append(state, 0)); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.decode(); !errors.Is(err, errCorruptEffect) {
				t.Fatalf("decode = %v, want errCorruptEffect", err)
			}
		})
	}
}

// FuzzDecodeState: stored states never panic the reader, and whatever
// decodes is stable: encoding it and decoding again yields the same bytes.
func FuzzDecodeState(f *testing.F) {
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	f.Add(encodeState(effectState{}))
	f.Add(encodeState(effectState{State: store.Pending, InFlight: true, Worker: "w", NotBefore: at,
		Attempts: []store.Attempt{{N: 1, Start: at, By: "w", Outcome: store.Pending}}}))
	f.Fuzz(func(t *testing.T, v []byte) {
		st, err := decodeState(v)
		if err != nil {
			return
		}
		enc := encodeState(st)
		again, err := decodeState(enc)
		if err != nil || !bytes.Equal(encodeState(again), enc) {
			t.Fatalf("round trip: %+v -> %+v (%v)", st, again, err)
		}
	})
}
