package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Effect records are binary: they are decoded by every Due, Get and
// transition and encoded inside the shared write transaction, where JSON's
// reflection was a visible share of the committer's time. Each record
// starts with a format byte so the layout can change by migration.
const recordFormat = 1

type writer []byte

func (w writer) str(s string) writer {
	w = binary.AppendUvarint(w, uint64(len(s)))
	return append(w, s...)
}

func (w writer) int(v int) writer { return binary.AppendVarint(w, int64(v)) }

// time stores t with its zone offset; the zero time as an empty field.
func (w writer) time(t time.Time) writer {
	if t.IsZero() {
		return append(w, 0)
	}
	b, err := t.MarshalBinary()
	if err != nil { // only for offsets that are not whole minutes
		b, _ = t.UTC().MarshalBinary()
	}
	w = append(w, byte(len(b)))
	return append(w, b...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or malformed %s", errCorruptEffect, what)
	}
	r.b = nil
}

func (r *reader) byte(what string) byte {
	if len(r.b) < 1 {
		r.fail(what)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) raw(n uint64, what string) []byte {
	if uint64(len(r.b)) < n {
		r.fail(what)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str(what string) string {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.fail(what)
		return ""
	}
	r.b = r.b[w:]
	return string(r.raw(n, what))
}

func (r *reader) int(what string) int {
	v, w := binary.Varint(r.b)
	if w <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[w:]
	return int(v)
}

func (r *reader) time(what string) time.Time {
	n := r.byte(what)
	if n == 0 || r.err != nil {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(r.raw(uint64(n), what)); err != nil {
		r.fail(what)
		return time.Time{}
	}
	return t
}

// encodeBody lays a body out as format, key, task, recipient, kind, run,
// created, then a payload flag (0: nil, 1: present) and the payload as is.
func encodeBody(b effectBody, payload []byte) ([]byte, error) {
	w := make(writer, 0, 64+len(b.Key)+len(b.TaskID)+len(b.Recipient)+len(b.Kind)+len(b.RunID)+len(payload))
	w = append(w, recordFormat)
	w = w.str(b.Key).str(b.TaskID).str(b.Recipient).str(b.Kind).str(b.RunID).time(b.CreatedAt)
	if payload == nil {
		return append(w, 0), nil
	}
	w = append(w, 1)
	return append(w, payload...), nil
}

// decodeBody is the inverse of encodeBody. The payload is copied: bbolt's
// memory is valid only inside the transaction.
func decodeBody(v []byte) (effectBody, []byte, error) {
	r := reader{b: v}
	var b effectBody
	if f := r.byte("body format"); r.err == nil && f != recordFormat {
		return b, nil, fmt.Errorf("%w: body format %d", errCorruptEffect, f)
	}
	b.Key, b.TaskID, b.Recipient = r.str("key"), r.str("task"), r.str("recipient")
	b.Kind, b.RunID, b.CreatedAt = r.str("kind"), r.str("run"), r.time("created")
	flag := r.byte("payload flag")
	if r.err != nil {
		return effectBody{}, nil, r.err
	}
	switch flag {
	case 0:
		if len(r.b) != 0 {
			return effectBody{}, nil, fmt.Errorf("%w: bytes after a nil payload", errCorruptEffect)
		}
		return b, nil, nil
	case 1:
		return b, append([]byte{}, r.b...), nil
	}
	return effectBody{}, nil, fmt.Errorf("%w: payload flag %d", errCorruptEffect, flag)
}

func encodeState(st effectState) []byte {
	w := make(writer, 0, 96+len(st.Attempts)*64+len(st.Error))
	w = append(w, recordFormat)
	w = w.str(string(st.State))
	if st.InFlight {
		w = append(w, 1)
	} else {
		w = append(w, 0)
	}
	w = w.str(st.Worker).time(st.NotBefore).time(st.ExpiresAt).time(st.UpdatedAt)
	w = w.str(st.Error).str(st.ProviderID).int(st.PartsSent).int(len(st.Attempts))
	for _, a := range st.Attempts {
		w = w.int(a.N).time(a.Start).time(a.End).int(a.Part).str(a.By).str(string(a.Outcome)).str(a.Error)
	}
	if st.Holds != 0 { // a field added later: records without it have none
		w = w.int(st.Holds)
	}
	return w
}

func decodeState(v []byte) (effectState, error) {
	r := reader{b: v}
	var st effectState
	if f := r.byte("state format"); r.err == nil && f != recordFormat {
		return st, fmt.Errorf("%w: state format %d", errCorruptEffect, f)
	}
	st.State = store.EffectState(r.str("state"))
	switch r.byte("in flight") {
	case 0:
	case 1:
		st.InFlight = true
	default:
		r.fail("in flight")
	}
	st.Worker, st.NotBefore, st.ExpiresAt, st.UpdatedAt = r.str("worker"), r.time("not before"), r.time("expires"), r.time("updated")
	st.Error, st.ProviderID, st.PartsSent = r.str("error"), r.str("provider id"), r.int("parts sent")
	n := r.int("attempts")
	if n < 0 || n > len(r.b) { // every attempt takes several bytes
		r.fail("attempts")
	}
	if n > 0 && r.err == nil {
		st.Attempts = make([]store.Attempt, n)
		for i := range st.Attempts {
			a := &st.Attempts[i]
			a.N, a.Start, a.End, a.Part = r.int("attempt n"), r.time("attempt start"), r.time("attempt end"), r.int("attempt part")
			a.By, a.Outcome, a.Error = r.str("attempt by"), store.EffectState(r.str("attempt outcome")), r.str("attempt error")
		}
	}
	if r.err == nil && len(r.b) != 0 {
		if st.Holds = r.int("holds"); st.Holds <= 0 { // written only when there are some
			r.fail("holds")
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("state (trailing bytes)")
	}
	if r.err != nil {
		return effectState{}, r.err
	}
	return st, nil
}
