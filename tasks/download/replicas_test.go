package download_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// replica is one herald process on the shared Redis: its own connection,
// data dir, engine and dispatcher, the dispatcher told which tasks this
// replica schedules as cmd/herald tells it.
type replica struct {
	dataDir string
	st      store.Store
	eng     *engine.Engine
	disp    *delivery.Dispatcher
	scans   atomic.Int64 // queue reads by the dispatcher
}

const replicaPoll = 20 * time.Millisecond

func newReplica(t *testing.T, url, prefix, holder string) *replica {
	t.Helper()
	r := &replica{dataDir: t.TempDir()}
	st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r.st = st
	var m *tasks.Manager
	sink := download.NewSink(download.Options{Dir: filepath.Join(r.dataDir, "downloads"),
		Plans: download.PlannerFunc(func(ctx context.Context, id string) (download.Plan, error) { return m.DownloadPlan(ctx, id) })})
	table := delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: inbox.New(st.Inbox())}})
	r.disp, err = delivery.NewDispatcher(delivery.Options{Ledger: countingDue{st.Ledger(), &r.scans}, Router: download.Router{Next: table, Sink: sink},
		Worker: holder, Poll: replicaPoll, Log: zerolog.Nop(),
		Owns: func(id string) bool { return r.eng.Scheduler.Schedules(id) }})
	if err != nil {
		t.Fatal(err)
	}
	p := tasks.Policy{Admins: []string{"console:admin"}, AllowPrivate: true, Named: map[string]bool{}, DownloadHosts: []string{"localhost"}}
	r.eng, err = engine.New(engine.Options{
		Store: st, Policy: p, Holder: holder, Log: zerolog.Nop(), RetryWaits: []time.Duration{time.Millisecond},
		Sources: tasks.SourceOpenerFunc(func(s watch.Spec, z *time.Location) (tasks.Source, error) {
			return source.New(s, source.Options{AllowPrivate: true, DefaultZone: z})
		}),
		WakeDelivery: r.disp.Wake, Replay: r.disp.Replayable,
	})
	if err != nil {
		t.Fatal(err)
	}
	m = r.eng.Catalog
	return r
}

// run starts f until the test ends.
func run(t *testing.T, f func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = f(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// countingDue counts the dispatcher's reads of the queue.
type countingDue struct {
	store.Ledger
	n *atomic.Int64
}

func (c countingDue) Due(ctx context.Context, now time.Time, limit int) ([]store.Effect, error) {
	c.n.Add(1)
	return c.Ledger.Due(ctx, now, limit)
}

// TestDownloadsAreWrittenByTheReplicaThatSchedulesTheTask: two replicas
// share one Redis. The one that owns the task's scheduling shard claims
// its course files; the other one's dispatcher sees them queued and
// leaves them as they are (no attempt), without reading the queue in a
// loop; once the owner's dispatcher runs, every file is written in the
// owner's data dir, and none in the other's.
func TestDownloadsAreWrittenByTheReplicaThatSchedulesTheTask(t *testing.T) {
	url, prefix := redistest.Prefix(t)
	site := twoCourses(time.Now())
	defer site.Close()
	a, b := newReplica(t, url, prefix, "replica-a"), newReplica(t, url, prefix, "replica-b")

	run(t, a.eng.Run) // alone, replica-a owns every shard
	waitUntil(t, "replica-a to own scheduling", func() bool { ok, _ := a.eng.Scheduler.Owner(); return ok })
	run(t, b.disp.Run)
	if err := a.eng.Catalog.SetDeclared(context.Background(), []tasks.Declared{{ID: taskID, Source: canvasSpec(site, "files"),
		Schedule: "every 1h", Notify: []string{notify}, Owner: owner}}); err != nil {
		t.Fatal(err)
	}
	var downloads []store.Effect
	waitUntil(t, "the baseline's downloads to be claimed", func() bool {
		downloads = downloadsOf(t, a.st)
		return len(downloads) == 6
	})
	if b.eng.Scheduler.Schedules(taskID) || !a.eng.Scheduler.Schedules(taskID) {
		t.Fatal("the task's shard is not replica-a's alone")
	}

	// replica-b's dispatcher looks at the queue for a while.
	from := b.scans.Load()
	window := 25 * replicaPoll
	time.Sleep(window)
	scans := b.scans.Load() - from
	for _, fx := range downloadsOf(t, a.st) {
		if fx.State != store.Pending || len(fx.Attempts) != 0 || fx.InFlight || fx.Holds != 0 {
			t.Fatalf("replica-b touched download %s: state %s, %d attempts, in flight %t, %d holds; want it untouched",
				fx.Key, fx.State, len(fx.Attempts), fx.InFlight, fx.Holds)
		}
	}
	t.Logf("replica-b read the queue %d times in %s", scans, window)
	if limit := int64(2*window/replicaPoll) + 10; scans > limit {
		t.Errorf("replica-b read the queue %d times in %s while leaving the downloads; want at most %d (no busy loop)", scans, window, limit)
	}

	run(t, a.disp.Run)
	waitUntil(t, "the downloads to complete", func() bool {
		for _, fx := range downloadsOf(t, a.st) {
			if fx.State != store.Completed {
				return false
			}
		}
		return true
	})
	for _, fx := range downloadsOf(t, a.st) {
		if by := fx.Attempts[len(fx.Attempts)-1].By; by != "replica-a" {
			t.Errorf("download %s was delivered by %s, want replica-a", fx.Key, by)
		}
	}
	if n := countFiles(t, filepath.Join(a.dataDir, "downloads")); n != 6 {
		t.Errorf("replica-a's data dir holds %d files, want the 6", n)
	}
	if n := countFiles(t, filepath.Join(b.dataDir, "downloads")); n != 0 {
		t.Errorf("replica-b's data dir holds %d files, want none", n)
	}
}

func downloadsOf(t *testing.T, st store.Store) []store.Effect {
	t.Helper()
	fxs, err := st.Ledger().List(context.Background(), taskID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Effect
	for _, fx := range fxs {
		if fx.Kind == download.Kind {
			out = append(out, fx)
		}
	}
	return out
}

// countFiles counts the regular files under dir (0 when it does not exist).
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
