package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store/flock"
)

// bbolt reads its file through a memory mapping and trusts what it finds:
// a page reference past the end of a truncated file is a bus error, and a
// scrambled page trips one of its assertions, sometimes in a goroutine of
// its own where no recover can reach it. So before bbolt maps a file,
// checkFile reads the file's structure with positioned reads, where a bad
// reference is only an error: the meta pages, the file's length against
// the pages they claim, and every page reachable from the root, each
// within the file, of a type bbolt expects, with its elements inside it,
// its keys in order and referenced once. A file that passes is one bbolt
// can walk without leaving it.

// ErrDamaged is wrapped by every error that refuses a store file as
// damaged. Such a file is left exactly as it was found.
var ErrDamaged = errors.New("store file damaged")

// Kinds of damage.
const (
	// DamageTruncated: the file ends before the pages its meta page counts.
	DamageTruncated = "truncated"
	// DamageCorrupt: a page or a record is not what the file's structure says.
	DamageCorrupt = "corrupt"
	// DamageNotStore: neither meta page is a bbolt meta page.
	DamageNotStore = "not a store file"
)

// DamagedError says what is wrong with a store file.
type DamagedError struct {
	Path   string
	Kind   string // one of the Damage constants
	Detail string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the store file %s is damaged (%s: %s)", e.Path, e.Kind, e.Detail)
}

// Unwrap makes every DamagedError match ErrDamaged.
func (e *DamagedError) Unwrap() error { return ErrDamaged }

// The bbolt file format (version 2), in the byte order of the machine
// that wrote it.
const (
	pageHeaderSize   = 16 // id(8) flags(2) count(2) overflow(4)
	elementSize      = 16 // branch: pos(4) ksize(4) pgid(8); leaf: flags(4) pos(4) ksize(4) vsize(4)
	bucketHeaderSize = 16 // root pgid(8) sequence(8)
	metaSize         = 64 // magic(4) version(4) pageSize(4) flags(4) root(16) freelist(8) pgid(8) txid(8) checksum(8)

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	leafBucket   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)

	minPageSize = 1 << 10
	maxPageSize = 1 << 20
	// maxDepth bounds the nesting of pages and buckets the walk follows;
	// herald's trees are a few levels deep.
	maxDepth = 64
)

var order = binary.NativeEndian

// fileMeta is the meta page bbolt would use.
type fileMeta struct {
	pageSize uint64
	root     uint64 // the root bucket's root page
	freelist uint64
	hwm      uint64 // pages [0, hwm) are in use or free
	txid     uint64
}

// parseMeta reads a meta page; ok is false when it is not a valid one.
func parseMeta(p []byte) (m fileMeta, ok bool) {
	if len(p) < pageHeaderSize+metaSize || order.Uint16(p[8:]) != flagMeta {
		return m, false
	}
	b := p[pageHeaderSize : pageHeaderSize+metaSize]
	if order.Uint32(b[0:]) != boltMagic || order.Uint32(b[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	_, _ = h.Write(b[:56])
	if h.Sum64() != order.Uint64(b[56:]) {
		return m, false
	}
	return fileMeta{
		pageSize: uint64(order.Uint32(b[8:])),
		root:     order.Uint64(b[16:]),
		freelist: order.Uint64(b[32:]),
		hwm:      order.Uint64(b[40:]),
		txid:     order.Uint64(b[48:]),
	}, true
}

// checkFile checks the structure of the store file at path without
// mapping it; the error wraps ErrDamaged when the file is damaged. It
// holds a shared lock on the file meanwhile, as a read-only bbolt would,
// so a process writing the file makes it wait, then time out.
func checkFile(path string, lockTimeout time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockShared(f, lockTimeout); err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	c := &checker{f: f, path: path, size: info.Size()}
	m, err := c.meta()
	if err != nil {
		return err
	}
	c.pageSize, c.hwm = m.pageSize, m.hwm
	c.seen = make([]uint64, (m.hwm+63)/64)
	c.mark(0)
	c.mark(1)
	if m.freelist != noFreelist {
		if err := c.freelist(m.freelist); err != nil {
			return err
		}
	}
	return c.bucket(m.root, 0, text("the meta page"))
}

// guarded runs fn, which reads the file through bbolt, with memory
// faults turned into panics and a panic into a DamagedError: the file
// check leaves bbolt nothing to trip on, and should something remain, a
// message beats a crash.
func guarded(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Path: path, Kind: DamageCorrupt, Detail: fmt.Sprintf("bbolt failed reading it: %v", r)}
		}
	}()
	return fn()
}

// openGuarded opens path with bbolt under guarded.
func openGuarded(path string, opts *bbolt.Options) (*bbolt.DB, error) {
	var db *bbolt.DB
	err := guarded(path, func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, opts)
		return err
	})
	return db, err
}

// lockShared takes a shared flock on f, retrying until timeout.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := flock.Try(f, false)
		if err == nil {
			return nil
		}
		if !errors.Is(err, flock.ErrHeld) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return bbolt.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checker walks one file.
type checker struct {
	f        *os.File
	path     string
	size     int64
	pageSize uint64
	hwm      uint64
	seen     []uint64 // a bit per page: reachable, or on the stored freelist
	bufs     [][]byte // a page buffer per depth of the walk
}

func (c *checker) damaged(kind, format string, args ...any) error {
	return &DamagedError{Path: c.path, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func (c *checker) corrupt(format string, args ...any) error {
	return c.damaged(DamageCorrupt, format, args...)
}

// meta picks the meta page bbolt would use (the valid one with the
// higher transaction id) and checks the file holds every page it counts.
func (c *checker) meta() (fileMeta, error) {
	if c.size == 0 {
		return fileMeta{}, c.damaged(DamageTruncated, "the file is empty")
	}
	head := make([]byte, 4096)
	n, err := c.f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return fileMeta{}, err
	}
	m0, ok0 := parseMeta(head[:n])
	// Page 1 sits one page size in; without a valid page 0 the size is
	// unknown, so try each one bbolt could have written.
	var m1 fileMeta
	var ok1 bool
	for ps := int64(minPageSize); ps <= maxPageSize && !ok1; ps <<= 1 {
		if ok0 && uint64(ps) != m0.pageSize {
			continue
		}
		n, err := c.f.ReadAt(head, ps)
		if err != nil && err != io.EOF {
			return fileMeta{}, err
		}
		if m, ok := parseMeta(head[:n]); ok && m.pageSize == uint64(ps) {
			m1, ok1 = m, true
		}
	}
	var m fileMeta
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m = m1
	case ok0:
		m = m0
	default:
		if c.size < 2*minPageSize {
			return fileMeta{}, c.damaged(DamageTruncated, "the file is %d bytes, shorter than its two meta pages", c.size)
		}
		return fileMeta{}, c.damaged(DamageNotStore, "neither meta page is valid")
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return fileMeta{}, c.corrupt("page size %d", m.pageSize)
	}
	if m.hwm < 2 {
		return fileMeta{}, c.corrupt("the meta page counts %d pages", m.hwm)
	}
	if m.hwm > uint64(c.size)/m.pageSize {
		return fileMeta{}, c.damaged(DamageTruncated, "the file is %d bytes and its meta page counts %d pages of %d bytes",
			c.size, m.hwm, m.pageSize)
	}
	return m, nil
}

func (c *checker) mark(id uint64) bool {
	w, b := id/64, uint64(1)<<(id%64)
	was := c.seen[w]&b != 0
	c.seen[w] |= b
	return was
}

// page reads page id, which the page or bucket from refers to, into the
// buffer of depth, and checks it lies inside the file, says it is page id,
// and is referenced for the first time.
func (c *checker) page(id uint64, depth int, from fmt.Stringer) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		return nil, c.corrupt("%s refers to page %d, outside pages 2 to %d", from, id, c.hwm-1)
	}
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, make([]byte, c.pageSize))
	}
	p := c.bufs[depth][:c.pageSize]
	if _, err := c.f.ReadAt(p, int64(id*c.pageSize)); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := order.Uint64(p); got != id {
		return nil, c.corrupt("page %d (from %s) identifies itself as page %d", id, from, got)
	}
	if over := uint64(order.Uint32(p[12:])); over > 0 {
		if over >= c.hwm-id {
			return nil, c.corrupt("page %d (from %s) runs %d pages past the last page", id, from, over)
		}
		n := (1 + over) * c.pageSize
		if uint64(cap(c.bufs[depth])) < n {
			more := make([]byte, n)
			copy(more, p)
			c.bufs[depth] = more
		}
		p = c.bufs[depth][:n]
		if _, err := c.f.ReadAt(p[c.pageSize:], int64((id+1)*c.pageSize)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
	}
	for i := uint64(0); i*c.pageSize < uint64(len(p)); i++ {
		if c.mark(id + i) {
			return nil, c.corrupt("page %d (from %s) is referenced twice or is also free", id+i, from)
		}
	}
	return p, nil
}

// pageRef names a page in messages.
type pageRef uint64

func (p pageRef) String() string { return "page " + strconv.FormatUint(uint64(p), 10) }

// bucketRef names a bucket in messages.
type bucketRef struct {
	name []byte
	in   fmt.Stringer
}

func (b bucketRef) String() string { return fmt.Sprintf("bucket %q in %s", b.name, b.in) }

type text string

func (t text) String() string { return string(t) }

// freelist marks the pages the stored freelist holds.
func (c *checker) freelist(id uint64) error {
	p, err := c.page(id, 0, text("the meta page's freelist"))
	if err != nil {
		return err
	}
	if flags := order.Uint16(p[8:]); flags != flagFreelist {
		return c.corrupt("freelist page %d has type %#x", id, flags)
	}
	off, count := uint64(pageHeaderSize), uint64(order.Uint16(p[10:]))
	if count == 0xFFFF {
		count = order.Uint64(p[pageHeaderSize:])
		off += 8
	}
	if count > (uint64(len(p))-off)/8 {
		return c.corrupt("freelist page %d claims %d ids", id, count)
	}
	for i := uint64(0); i < count; i++ {
		free := order.Uint64(p[off+8*i:])
		if free < 2 || free >= c.hwm {
			return c.corrupt("the freelist holds page %d, outside pages 2 to %d", free, c.hwm-1)
		}
		if c.mark(free) {
			return c.corrupt("page %d is free twice or also in use", free)
		}
	}
	return nil
}

// bucket walks the tree of a bucket whose root is page root.
func (c *checker) bucket(root uint64, depth int, from fmt.Stringer) error {
	return c.node(root, nil, nil, depth, from)
}

// node walks the subtree at page id, whose keys lie in [lo, hi) (nil:
// unbounded).
func (c *checker) node(id uint64, lo, hi []byte, depth int, from fmt.Stringer) error {
	if depth > maxDepth {
		return c.corrupt("page %d (from %s) is nested deeper than %d", id, from, maxDepth)
	}
	p, err := c.page(id, depth, from)
	if err != nil {
		return err
	}
	where := pageRef(id)
	switch flags := order.Uint16(p[8:]); flags {
	case flagLeaf:
		return c.leaf(p, lo, hi, depth, where)
	case flagBranch:
	default:
		return c.corrupt("%s (from %s) has type %#x where a branch or leaf page belongs", where, from, flags)
	}
	count := uint64(order.Uint16(p[10:]))
	if count == 0 || pageHeaderSize+count*elementSize > uint64(len(p)) {
		return c.corrupt("%s: a branch page of %d elements", where, count)
	}
	key := func(i uint64) ([]byte, error) {
		e := pageHeaderSize + i*elementSize
		pos, ksize := uint64(order.Uint32(p[e:])), uint64(order.Uint32(p[e+4:]))
		if e+pos+ksize > uint64(len(p)) {
			return nil, c.corrupt("%s: element %d lies outside the page", where, i)
		}
		return p[e+pos : e+pos+ksize], nil
	}
	k, err := key(0)
	if err != nil {
		return err
	}
	for i := range count {
		next := hi
		if i+1 < count {
			if next, err = key(i + 1); err != nil {
				return err
			}
			if bytes.Compare(k, next) >= 0 {
				return c.corrupt("%s: key %d is not after key %d", where, i+1, i)
			}
		}
		if err := inRange(k, lo, hi); err != nil {
			return c.corrupt("%s: key %d %v", where, i, err)
		}
		child := order.Uint64(p[pageHeaderSize+i*elementSize+8:])
		if err := c.node(child, k, next, depth+1, where); err != nil {
			return err
		}
		k = next
	}
	return nil
}

// inRange checks lo <= key < hi (nil: unbounded).
func inRange(key, lo, hi []byte) error {
	switch {
	case lo != nil && bytes.Compare(key, lo) < 0:
		return errors.New("is before its parent's key")
	case hi != nil && bytes.Compare(key, hi) >= 0:
		return errors.New("is not before the next key of its parent")
	}
	return nil
}

// leaf checks a leaf page (or an inline bucket's page, which is a leaf
// page inside a value) and walks the buckets it holds.
func (c *checker) leaf(p []byte, lo, hi []byte, depth int, where fmt.Stringer) error {
	count := uint64(order.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > uint64(len(p)) {
		return c.corrupt("%s: a leaf page of %d elements", where, count)
	}
	var prev []byte
	for i := range count {
		e := pageHeaderSize + i*elementSize
		flags, pos := order.Uint32(p[e:]), uint64(order.Uint32(p[e+4:]))
		ksize, vsize := uint64(order.Uint32(p[e+8:])), uint64(order.Uint32(p[e+12:]))
		if e+pos+ksize+vsize > uint64(len(p)) {
			return c.corrupt("%s: element %d lies outside the page", where, i)
		}
		k := p[e+pos : e+pos+ksize]
		if i > 0 && bytes.Compare(prev, k) >= 0 {
			return c.corrupt("%s: key %d is not after key %d", where, i, i-1)
		}
		if err := inRange(k, lo, hi); err != nil {
			return c.corrupt("%s: key %d %v", where, i, err)
		}
		prev = k
		if flags&leafBucket == 0 {
			continue
		}
		v := p[e+pos+ksize : e+pos+ksize+vsize]
		name := bucketRef{name: k, in: where}
		if len(v) < bucketHeaderSize {
			return c.corrupt("%s: a bucket header of %d bytes", name, len(v))
		}
		if depth >= maxDepth {
			return c.corrupt("%s is nested deeper than %d", name, maxDepth)
		}
		if root := order.Uint64(v); root != 0 {
			if err := c.bucket(root, depth+1, name); err != nil {
				return err
			}
			continue
		}
		inline := v[bucketHeaderSize:]
		if len(inline) < pageHeaderSize || order.Uint16(inline[8:]) != flagLeaf {
			return c.corrupt("%s: its inline page is not a leaf page", name)
		}
		if err := c.leaf(inline, nil, nil, depth+1, name); err != nil {
			return err
		}
	}
	return nil
}
