package bolt

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/herald-bridge/herald/store"
)

// Logged effects. Claims of unfenced commits (inbound events, tests)
// and every later transition of those effects are made durable in the
// ledger log (ledgerlog.go) instead of a bbolt commit, and kept in memory
// until a checkpoint has copied them into the file. Reads look here
// first. Everything else (fenced task runs, effects already in the file)
// goes through bbolt as before, in the same committer rounds, so one
// goroutine decides every claim and no key is claimed twice.
//
// A round: the bbolt writes of the round commit first; then the logged
// operations are decided against the overlay and the file, their records
// appended, and the log synced once; only then is any of them answered.
// A checkpoint takes every logged effect as it stands at a round
// boundary, turns the log over to its other file, writes the effects into
// bbolt with the generation it covers, and drops from memory those not
// changed since. A failed log write or checkpoint stops the ledger
// (store.ErrUnavailable) rather than answer on a record that may be lost.

// Checkpoint policy: when this many effects are in memory, when the log
// file has grown this much, or this long after the last one.
var (
	checkpointEffects       = 2048
	checkpointBytes   int64 = logPrealloc / 2
	checkpointEvery         = 250 * time.Millisecond
)

// logged is one effect held in memory.
type logged struct {
	f     fx     // body, payload and current state
	body  []byte // the body encoded, as the file stores it
	ver   uint64 // bumped by every change
	order uint64 // claim order, kept when checkpointed
}

func (e *logged) encoded() encoded {
	return encoded{key: e.f.body.Key, task: e.f.body.TaskID, body: e.body, state: encodeState(e.f.st), st: e.f.st}
}

// overlay holds the logged effects and the log.
type overlay struct {
	db *bbolt.DB

	mu   sync.Mutex // guards m, n, wait, err; held by the committer through a round but for its sync
	m    map[string]*logged
	n    uint64
	wait map[string]*logged // those of m that wait in the queue
	err  error
	log  *ledgerLog // the committer's only

	cpMu   sync.Mutex // one checkpoint at a time
	kick   chan struct{}
	stop   chan struct{}
	doneCP chan struct{}
	gc     *committer
}

// logOp is one logged operation queued on the committer.
type logOp struct {
	claim   []encoded // a claim: the effects, prepared
	fx      []fx      // their decoded form, for memory
	key     string    // a transition: the effect and its step
	step    step
	capture bool // a checkpoint's turn of the log

	// fileFn is the transition on the file, for an effect not logged.
	fileFn func(tx *bbolt.Tx) error

	// answers
	res   store.CommitResult
	out   fx
	taken []taken // a capture: the effects as they stand
	gen   uint64
}

// openOverlay replays what the log holds beyond the file's last
// checkpoint into the file, then starts a new generation.
func openOverlay(db *bbolt.DB, dir string) (*overlay, error) {
	paths := logPaths(dir)
	var done uint64
	if err := db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bktMeta).Get(keyLogGen); len(v) == 8 {
			done = binaryU64(v)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	type file struct {
		gen  uint64
		recs []logRecord
	}
	var (
		files []file
		gens  [2]uint64
	)
	last := done
	for i, p := range paths {
		gen, recs, err := readLog(p)
		if err != nil {
			return nil, fmt.Errorf("read ledger log: %w", err)
		}
		gens[i], last = gen, max(last, gen)
		if gen > done {
			files = append(files, file{gen, recs})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.gen, b.gen) })
	if len(files) > 0 {
		err := db.Update(func(tx *bbolt.Tx) error {
			for _, f := range files {
				for _, r := range f.recs {
					e, err := decodeLogged(r)
					if err != nil {
						return err
					}
					if err := put(tx, e); err != nil {
						return err
					}
				}
			}
			return tx.Bucket(bktMeta).Put(keyLogGen, u64(last))
		})
		if err != nil {
			return nil, fmt.Errorf("replay ledger log: %w", err)
		}
	}
	// Write next into the file holding the older generation.
	idx := 0
	if gens[1] < gens[0] {
		idx = 1
	}
	l, err := startLog(paths, idx, last+1)
	if err != nil {
		return nil, fmt.Errorf("start ledger log: %w", err)
	}
	return &overlay{db: db, m: map[string]*logged{}, wait: map[string]*logged{}, log: l,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), doneCP: make(chan struct{})}, nil
}

func decodeLogged(r logRecord) (encoded, error) {
	st, err := decodeState(r.state)
	if err != nil {
		return encoded{}, err
	}
	e := encoded{key: r.key, body: r.body, state: r.state, st: st}
	if r.body != nil {
		b, _, err := decodeBody(r.body)
		if err != nil {
			return encoded{}, err
		}
		e.task = b.TaskID
	}
	return e, nil
}

// start runs the background checkpoints.
func (o *overlay) start(gc *committer) {
	o.gc = gc
	go o.checkpoints()
}

func (o *overlay) checkpoints() {
	defer close(o.doneCP)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-o.kick:
		case <-t.C:
		}
		_ = o.checkpoint()
	}
}

// close stops the background checkpoints and writes a last one.
func (o *overlay) close() error {
	select {
	case <-o.stop:
		return nil
	default:
	}
	close(o.stop)
	<-o.doneCP
	return o.checkpoint()
}

// failed is the error that stopped the ledger, if any.
func (o *overlay) failed() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *overlay) fail(err error) error {
	if o.err == nil {
		o.err = fmt.Errorf("bolt: ledger log: %v: %w", err, store.ErrUnavailable)
	}
	return o.err
}

// round runs one committer round that holds logged operations.
func (o *overlay) round(c *committer, batch []*call) {
	o.mu.Lock()
	var txs, ops []*call
	for _, cl := range batch {
		switch {
		case cl.op == nil:
			txs = append(txs, cl)
		case cl.op.step != nil && o.m[cl.op.key] == nil && o.err == nil:
			cl.fn = cl.op.fileFn
			txs = append(txs, cl)
		default:
			ops = append(ops, cl)
		}
	}
	if len(txs) > 0 {
		c.run(txs)
	}
	errs := make([]error, len(ops))
	if o.err == nil {
		o.claimed(ops)
		for i, cl := range ops {
			errs[i] = o.apply(cl.op)
		}
	}
	err := o.err
	o.mu.Unlock()
	if err == nil && len(ops) > 0 {
		start := time.Now()
		if err = o.log.sync(); err != nil {
			o.mu.Lock()
			err = o.fail(err)
			o.mu.Unlock()
		}
		c.stats.txs.Add(1) // a log round counts as one fsync round
		c.stats.calls.Add(int64(len(ops)))
		c.stats.busy.Add(int64(time.Since(start)))
	}
	for i, cl := range ops {
		if cl.op.capture && err == nil {
			o.mu.Lock()
			errs[i] = o.turn(cl.op)
			o.mu.Unlock()
		}
		if err != nil {
			errs[i] = err
		}
		cl.err <- errs[i]
	}
	if o.due() {
		select {
		case o.kick <- struct{}{}:
		default:
		}
	}
}

// track keeps e in wait while it waits in the queue.
func (o *overlay) track(e *logged) {
	if waiting(&e.f.st) {
		o.wait[e.f.body.Key] = e
	} else {
		delete(o.wait, e.f.body.Key)
	}
}

// due reports whether a checkpoint should start.
func (o *overlay) due() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m) >= checkpointEffects || o.log.size() >= checkpointBytes
}

// claimed marks, in each claim op's result, the keys the file holds
// already (one read for the round).
func (o *overlay) claimed(ops []*call) {
	var keys []string
	for _, cl := range ops {
		for _, e := range cl.op.claim {
			if o.m[e.key] == nil {
				keys = append(keys, e.key)
			}
		}
	}
	if len(keys) == 0 {
		return
	}
	inFile := map[string]bool{}
	err := o.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bktFxClaim)
		for _, k := range keys {
			if b.Get([]byte(k)) != nil {
				inFile[k] = true
			}
		}
		return nil
	})
	if err != nil {
		o.fail(err)
		return
	}
	for _, cl := range ops {
		for _, e := range cl.op.claim {
			if inFile[e.key] {
				cl.op.res.Duplicates = append(cl.op.res.Duplicates, e.key)
			}
		}
	}
}

// apply decides one logged operation in memory and buffers its record.
func (o *overlay) apply(op *logOp) error {
	switch {
	case op.capture:
		return nil
	case op.step != nil:
		e := o.m[op.key]
		st, err := op.step(e.f.st) // a new state: answers handed out keep theirs
		if err != nil {
			return err
		}
		e.f.st, e.ver = st, e.ver+1
		o.track(e)
		o.log.add(op.key, nil, encodeState(st))
		op.out = e.f
		return nil
	}
	for i, e := range op.claim {
		if o.m[e.key] != nil || slices.Contains(op.res.Duplicates, e.key) {
			if !slices.Contains(op.res.Duplicates, e.key) {
				op.res.Duplicates = append(op.res.Duplicates, e.key)
			}
			continue
		}
		o.n++
		o.m[e.key] = &logged{f: op.fx[i], body: e.body, ver: 1, order: o.n}
		o.track(o.m[e.key])
		o.log.add(e.key, e.body, e.state)
		op.res.Claimed = append(op.res.Claimed, e.key)
	}
	return nil
}

// taken is a logged effect as a checkpoint took it.
type taken struct {
	e          encoded // its state encoded by the checkpoint
	ver, order uint64
}

// turn takes every logged effect for a checkpoint and turns the log over.
// It runs in a round, under the lock: it only copies. The checkpoint
// sorts and encodes outside it; a later step replaces e.f.st and clones
// its attempts, so the copies stay as they are.
func (o *overlay) turn(op *logOp) error {
	op.taken = make([]taken, 0, len(o.m))
	for _, e := range o.m {
		op.taken = append(op.taken, taken{
			e:   encoded{key: e.f.body.Key, task: e.f.body.TaskID, body: e.body, st: e.f.st},
			ver: e.ver, order: e.order,
		})
	}
	gen, err := o.log.rotate()
	if err != nil {
		return o.fail(err)
	}
	op.gen = gen
	return nil
}

// checkpoint copies every logged effect into the file (see above).
func (o *overlay) checkpoint() error {
	o.cpMu.Lock()
	defer o.cpMu.Unlock()
	if err := o.failed(); err != nil {
		return err
	}
	o.mu.Lock()
	empty := len(o.m) == 0
	o.mu.Unlock()
	if empty {
		return nil
	}
	op := &logOp{capture: true}
	if err := o.gc.queue(op); err != nil {
		return err
	}
	slices.SortFunc(op.taken, func(a, b taken) int { return cmp.Compare(a.order, b.order) }) // claim order: file sequence numbers follow it
	for i := range op.taken {
		op.taken[i].e.state = encodeState(op.taken[i].e.st)
	}
	err := o.db.Update(func(tx *bbolt.Tx) error {
		for _, t := range op.taken {
			if err := put(tx, t.e); err != nil {
				return err
			}
		}
		return tx.Bucket(bktMeta).Put(keyLogGen, u64(op.gen))
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		return o.fail(fmt.Errorf("checkpoint: %w", err))
	}
	for _, t := range op.taken {
		if cur := o.m[t.e.key]; cur != nil && cur.ver == t.ver {
			delete(o.m, t.e.key)
			delete(o.wait, t.e.key)
		}
	}
	return nil
}

// get returns a logged effect.
func (o *overlay) get(key string) (store.Effect, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return store.Effect{}, false, o.err
	}
	e := o.m[key]
	if e == nil {
		return store.Effect{}, false, nil
	}
	return e.f.effect(), true, nil
}

// waiting reports whether st waits in the queue.
func waiting(st *effectState) bool { return st.Queued() }

// queued returns the logged effects waiting in the queue with NotBefore
// up to until (the zero time: any).
func (o *overlay) queued(until time.Time) ([]store.Effect, error) {
	return o.pick(o.wait, func(st *effectState) bool { return until.IsZero() || !st.NotBefore.After(until) })
}

// inFlight returns the logged effects in flight.
func (o *overlay) inFlight() ([]store.Effect, error) {
	return o.pick(o.m, func(st *effectState) bool { return st.Flying() })
}

// pick returns the effects of from (m or wait) whose state want accepts.
func (o *overlay) pick(from map[string]*logged, want func(*effectState) bool) ([]store.Effect, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return nil, o.err
	}
	var out []store.Effect
	for _, e := range from {
		if want(&e.f.st) {
			out = append(out, e.f.effect())
		}
	}
	return out, nil
}

// fileCopies keeps the effects read from the file that are not logged:
// a logged effect's copy in the file is stale.
func (o *overlay) fileCopies(es []store.Effect) []store.Effect {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) == 0 {
		return es
	}
	return slices.DeleteFunc(es, func(e store.Effect) bool { return o.m[e.Key] != nil })
}
