package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"

	"go.etcd.io/bbolt"
)

// Posting lists of the history index. A term's turns are kept in blocks
// of up to postBlock sequences, ascending:
//
//	term 0x00 first(8) -> uvarint deltas of the block's other sequences
//
// A block costs one bucket entry for many turns, so the index stays a
// small part of the file, and a new turn touches only the last block of
// each of its terms.
const postBlock = 128

var errCorruptPostings = errors.New("corrupt history index block")

func postPrefix(term string) []byte { return append([]byte(term), 0) }

func blockKey(prefix []byte, first uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, prefix...), first)
}

// decodeBlock returns the sequences of a block, ascending.
func decodeBlock(first uint64, v []byte) ([]uint64, error) {
	out := make([]uint64, 1, 1+len(v))
	out[0] = first
	for len(v) > 0 {
		d, n := binary.Uvarint(v)
		if n <= 0 || d == 0 {
			return nil, errCorruptPostings
		}
		first += d
		out = append(out, first)
		v = v[n:]
	}
	return out, nil
}

func encodeBlock(seqs []uint64) []byte {
	out := make([]byte, 0, 2*len(seqs))
	for i := 1; i < len(seqs); i++ {
		out = binary.AppendUvarint(out, seqs[i]-seqs[i-1])
	}
	return out
}

// blockAtOrBefore positions c on the block of prefix whose first sequence
// is the largest at or below seq; ok is false when there is none.
func blockAtOrBefore(c *bbolt.Cursor, prefix []byte, seq uint64) (k, v []byte, ok bool) {
	want := blockKey(prefix, seq)
	k, v = c.Seek(want)
	if k == nil || !bytes.Equal(k, want) {
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	if k == nil || len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return nil, nil, false
	}
	return k, v, true
}

// postAdd indexes seq under term; seq is higher than any indexed before
// in this log.
func postAdd(b *bbolt.Bucket, term string, seq uint64) error {
	prefix := postPrefix(term)
	k, v, ok := blockAtOrBefore(b.Cursor(), prefix, seq)
	if ok {
		first := binaryU64(k[len(prefix):])
		seqs, err := decodeBlock(first, v)
		if err != nil {
			return err
		}
		if last := seqs[len(seqs)-1]; len(seqs) < postBlock && seq > last {
			nv := binary.AppendUvarint(append([]byte{}, v...), seq-last)
			return b.Put(append([]byte{}, k...), nv)
		}
	}
	return b.Put(blockKey(prefix, seq), nil)
}

// postRemove drops seq from term's list.
func postRemove(b *bbolt.Bucket, term string, seq uint64) error {
	prefix := postPrefix(term)
	k, v, ok := blockAtOrBefore(b.Cursor(), prefix, seq)
	if !ok {
		return nil
	}
	key := append([]byte{}, k...)
	seqs, err := decodeBlock(binaryU64(k[len(prefix):]), v)
	if err != nil {
		return err
	}
	i := 0
	for i < len(seqs) && seqs[i] != seq {
		i++
	}
	if i == len(seqs) {
		return nil
	}
	seqs = append(seqs[:i], seqs[i+1:]...)
	if i == 0 || len(seqs) == 0 {
		if err := b.Delete(key); err != nil {
			return err
		}
		if len(seqs) == 0 {
			return nil
		}
		key = blockKey(prefix, seqs[0])
	}
	return b.Put(key, encodeBlock(seqs))
}

// postCursor answers "the largest sequence at or below hi" for one term,
// keeping the last block it decoded.
type postCursor struct {
	c      *bbolt.Cursor
	prefix []byte
	seqs   []uint64 // the cached block, ascending
	hiSeek uint64   // the bound it was found for
}

func (p *postCursor) seekLE(hi uint64) (uint64, bool, error) {
	// The cached block answers any hi between its first sequence and the
	// bound it was found for: no other block starts in between.
	if len(p.seqs) == 0 || p.seqs[0] > hi || hi > p.hiSeek {
		k, v, ok := blockAtOrBefore(p.c, p.prefix, hi)
		if !ok {
			p.seqs = nil
			return 0, false, nil
		}
		seqs, err := decodeBlock(binaryU64(k[len(p.prefix):]), v)
		if err != nil {
			return 0, false, err
		}
		p.seqs, p.hiSeek = seqs, hi
	}
	// The block's first sequence is at or below hi.
	i := len(p.seqs) - 1
	for p.seqs[i] > hi {
		i--
	}
	return p.seqs[i], true, nil
}
