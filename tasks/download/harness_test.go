package download_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/conversation"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/store/redis/redistest"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

const (
	taskID = "cs101"
	owner  = "console:alice"
	notify = "inbox:console:alice"
)

// harness is herald's scheduled path end to end, without the binary: the
// real source kinds, the task manager, the ledger on the embedded store,
// the dispatcher with the inbox sink and the download sink, all running.
type harness struct {
	t       testing.TB
	dataDir string
	st      store.Store
	m       *tasks.Manager
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	bound   time.Duration // how long eventually waits (default 20 s)
}

// backend opens the store a harness runs on, in its data dir.
type backend func(t testing.TB, dataDir string) store.Store

// onBolt is the embedded store.
func onBolt(t testing.TB, dataDir string) store.Store {
	st, err := bolt.Open(filepath.Join(dataDir, "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// onRedis is the test Redis, under a key prefix of this test alone.
func onRedis(t testing.TB, _ string) store.Store {
	url, prefix := redistest.Prefix(t)
	st, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// start runs herald over spec (a course-site watch) with policy p, on
// the embedded store.
func start(t testing.TB, spec watch.Spec, p tasks.Policy, remind ...time.Duration) *harness {
	return startOn(t, onBolt, spec, p, remind...)
}

// startOn runs herald on the store open gives.
func startOn(t testing.TB, open backend, spec watch.Spec, p tasks.Policy, remind ...time.Duration) *harness {
	t.Helper()
	h := &harness{t: t, dataDir: t.TempDir()}
	st := open(t, h.dataDir)
	h.st = st
	sink := download.NewSink(download.Options{Dir: filepath.Join(h.dataDir, "downloads"),
		Plans: download.PlannerFunc(func(ctx context.Context, id string) (download.Plan, error) { return h.m.DownloadPlan(ctx, id) })})
	table := delivery.NewTable(delivery.TableConfig{Sinks: map[delivery.AddressKind]delivery.Sink{delivery.InboxAddr: inbox.New(st.Inbox())}})
	disp, err := delivery.NewDispatcher(delivery.Options{Ledger: st.Ledger(), Router: download.Router{Next: table, Sink: sink},
		Worker: "worker-a", Poll: 20 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	p.Admins, p.AllowPrivate, p.Named = []string{"console:admin"}, true, map[string]bool{}
	if p.DownloadHosts == nil {
		p.DownloadHosts = []string{"localhost"}
	}
	eng, err := engine.New(engine.Options{
		Store: st, Policy: p, Holder: "replica-a", Log: zerolog.Nop(), RetryWaits: []time.Duration{time.Millisecond, time.Millisecond},
		Sources: tasks.SourceOpenerFunc(func(s watch.Spec, z *time.Location) (tasks.Source, error) {
			return source.New(s, source.Options{AllowPrivate: true, DefaultZone: z})
		}),
		WakeDelivery: disp.Wake, Replay: disp.Replayable, Alive: func(w string) bool { return w == "worker-a" },
	})
	if err != nil {
		t.Fatal(err)
	}
	h.m = eng.Catalog
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(2)
	go func() { defer h.wg.Done(); _ = disp.Run(ctx) }()
	go func() { defer h.wg.Done(); _ = eng.Run(ctx) }()
	t.Cleanup(h.stop)
	if err := h.m.SetDeclared(ctx, []tasks.Declared{{ID: taskID, Source: spec, Schedule: "every 1h", RemindBefore: remind,
		Notify: []string{notify}, Owner: owner}}); err != nil {
		t.Fatal(err)
	}
	h.waitRuns(1) // the baseline, owed at once
	return h
}

func (h *harness) stop() {
	h.cancel()
	h.wg.Wait()
	h.st.Close()
}

// eventually waits for cond, a real condition; the bound only stops a
// broken build from hanging.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	bound := h.bound
	if bound <= 0 {
		bound = 20 * time.Second
	}
	for end := time.Now().Add(bound); !cond(); {
		if time.Now().After(end) {
			h.t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) waitRuns(n int) {
	h.t.Helper()
	h.eventually("runs recorded", func() bool {
		runs, _ := h.m.Runs(context.Background(), taskID, 0)
		return len(runs) >= n
	})
}

// waitRunsList returns the runs once the first is recorded, newest first.
func (h *harness) waitRunsList() []tasks.RunRecord {
	h.t.Helper()
	h.waitRuns(1)
	runs, _ := h.m.Runs(context.Background(), taskID, 0)
	return runs
}

// run checks the task now: a new run, not one that was finishing as it
// was asked for (RunNow joins a run in progress).
func (h *harness) run() tasks.RunRecord {
	h.t.Helper()
	old := map[string]bool{}
	runs, _ := h.m.Runs(context.Background(), taskID, 0)
	for _, r := range runs {
		old[r.ID] = true
	}
	for {
		rec, err := h.m.RunNow(context.Background(), "", taskID)
		if err != nil {
			h.t.Fatal(err)
		}
		if !old[rec.ID] {
			return rec
		}
	}
}

// say sends text as principal in its private chat and returns the reply.
func (h *harness) say(principal, text string) string {
	h.t.Helper()
	core, err := conversation.New(conversation.Options{Tasks: h.m, Store: h.st, Zone: time.UTC, Log: zerolog.Nop()})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, r := range core.Handle(context.Background(), conversation.Message{Channel: "console", ID: text, Principal: principal,
		Chat: conversation.ChatOf(principal), Text: text, Lang: "en"}) {
		out = append(out, r.Text)
	}
	return strings.Join(out, "\n")
}

// effects splits the task's ledger: item notices (watch.changed and
// watch.deadline, one per event and recipient) and downloads.
func (h *harness) effects() (notices, downloads []store.Effect) {
	h.t.Helper()
	fxs, err := h.st.Ledger().List(context.Background(), taskID, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, fx := range fxs {
		switch fx.Kind {
		case delivery.KindChanged, delivery.KindDeadline:
			notices = append(notices, fx)
		case download.Kind:
			downloads = append(downloads, fx)
		}
	}
	return notices, downloads
}

// settled waits until no download is pending, and returns them all.
func (h *harness) settled() []store.Effect {
	h.t.Helper()
	var out []store.Effect
	h.eventually("downloads settled", func() bool {
		_, out = h.effects()
		for _, fx := range out {
			if fx.State == store.Pending {
				return false
			}
		}
		return true
	})
	return out
}

// kept is the task's download directory for a relative dir.
func (h *harness) kept(dir string) string { return filepath.Join(h.dataDir, "downloads", taskID, dir) }

func itemTitles(t *testing.T, fxs []store.Effect) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, fx := range fxs {
		var m delivery.Message
		if err := json.Unmarshal(fx.Payload, &m); err != nil {
			t.Fatal(err)
		}
		for _, it := range m.Items {
			out[it.Change+" "+it.Title]++
		}
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kept file: %v", err)
	}
	return b
}
