package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
)

// shardFeeds serves one small RSS document per task path and notes every
// fetch, and any fetch of a path while another of it is still answered.
type shardFeeds struct {
	srv *httptest.Server

	mu       sync.Mutex
	items    map[string][]string // path -> item guids
	fetches  map[string]int
	inFlight map[string]int
	overlaps []string
}

func newShardFeeds(t *testing.T) *shardFeeds {
	t.Helper()
	f := &shardFeeds{items: map[string][]string{}, fetches: map[string]int{}, inFlight: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *shardFeeds) handle(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	f.mu.Lock()
	f.fetches[p]++
	f.inFlight[p]++
	if f.inFlight[p] > 1 {
		f.overlaps = append(f.overlaps, p)
	}
	guids := append([]string(nil), f.items[p]...)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inFlight[p]--; f.mu.Unlock() }()
	// The source's own work: long enough that two runs of one task
	// would be seen answering at once. A request its run gave up on (the
	// client went away) is no longer a run in progress.
	select {
	case <-time.After(100 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>shard feed</title><link>https://feeds.example.org/</link><description>d</description>`)
	for _, g := range guids {
		fmt.Fprintf(&b, "<item><title>Post %s</title><link>https://feeds.example.org/%s</link><guid>%s</guid></item>", g, g, g)
	}
	b.WriteString("</channel></rss>")
	w.Header().Set("Content-Type", "application/rss+xml")
	_, _ = io.WriteString(w, b.String())
}

func (f *shardFeeds) add(path, guid string) {
	f.mu.Lock()
	f.items[path] = append(f.items[path], guid)
	f.mu.Unlock()
}

func (f *shardFeeds) fetched() (map[string]int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.fetches))
	for k, v := range f.fetches {
		out[k] = v
	}
	return out, append([]string(nil), f.overlaps...)
}

// shardHolders reads each shard's unexpired holder straight from Redis.
func shardHolders(t *testing.T, rdb *goredis.Client, prefix string, n int) []string {
	t.Helper()
	out := make([]string, n)
	now := time.Now().UnixMicro()
	for i := range n {
		vals, err := rdb.HMGet(context.Background(), "{"+prefix+"}lease:h:"+store.ShardLease(i, n), "holder", "exp").Result()
		if err != nil {
			t.Fatal(err)
		}
		h, _ := vals[0].(string)
		exp, _ := vals[1].(string)
		if e, _ := strconv.ParseInt(exp, 10, 64); h != "" && e > now {
			out[i] = h
		}
	}
	return out
}

// TestI5_ThreeReplicasShareShardsKilledOnesTakenOverWithinTTL runs three
// replicas on one Redis with 64 scheduling shards: every shard is owned by
// exactly one replica and each owns some; after one is killed with
// SIGKILL the others own its shards within one lease TTL; across the whole
// test every task's due checks happen once each, never two at a time, and
// no push reaches the receiver twice (I1, I4, I5).
func TestI5_ThreeReplicasShareShardsKilledOnesTakenOverWithinTTL(t *testing.T) {
	redisURL := replicaRedisURL(t)
	sinkSecret := newSecret()
	sink := newCountingSink(t, sinkSecret, 0)
	env := newReplicaEnv(t, redisURL, sink, sinkSecret)
	bin := env.bin
	const shards, nTasks = 64, 12
	ttl := 2 * time.Second
	feeds := newShardFeeds(t)
	env.shards, env.leaseTTL = shards, ttl.String()
	var decl strings.Builder
	decl.WriteString("tasks:\n")
	for k := range nTasks {
		path := fmt.Sprintf("/feed-%d.xml", k)
		feeds.add(path, fmt.Sprintf("old-%d", k))
		fmt.Fprintf(&decl, "  - id: feed-%d\n    source: {kind: rss, url: %q}\n    schedule: every 1m\n    notify: [sink]\n", k, feeds.srv.URL+path)
	}
	env.tasks = decl.String()

	opt, err := goredis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()

	rs := []*replica{env.start(t, "a"), env.start(t, "b"), env.start(t, "c")}
	byHolder := map[string]*replica{}
	for _, r := range rs {
		st, err := r.status(bin)
		if err != nil {
			t.Fatal(err)
		}
		byHolder[st.Holder] = r
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for _, h := range shardHolders(t, rdb, env.prefix, shards) {
			out[h]++
		}
		return out
	}
	waitFor(t, 30*time.Second, "every shard owned, each replica owning some and none over its share", func() bool {
		c := counts()
		if c[""] != 0 {
			return false
		}
		for h := range byHolder {
			if c[h] == 0 || c[h] > store.FairShare(shards, len(byHolder)) {
				return false
			}
		}
		return len(c) == len(byHolder)
	})
	// What each replica reports matches the leases: status and /metrics.
	seen := map[int]string{}
	for h, r := range byHolder {
		st, err := r.status(bin)
		if err != nil || st.Shards == nil {
			t.Fatalf("%s status: %v %+v", r.name, err, st)
		}
		for _, i := range st.Shards.Mine {
			if prev, dup := seen[i]; dup {
				t.Fatalf("shard %d reported by %s and %s", i, byHolder[prev].name, r.name)
			}
			seen[i] = h
		}
		out, err := r.cli(bin, "status")
		if want := fmt.Sprintf("shards:   %d of %d here", len(st.Shards.Mine), shards); err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s status text lacks %q (%v):\n%s", r.name, want, err, out)
		}
		if v, ok := r.labelled("herald_scheduler_shards_owned", h); !ok || int(v) != len(st.Shards.Mine) {
			t.Errorf("%s herald_scheduler_shards_owned = %v (found %v), status says %d", r.name, v, ok, len(st.Shards.Mine))
		}
	}
	// completed counts a task's checks that ran to the end (a run
	// cancelled because its shard moved commits nothing and is owed again).
	completed := func(r *replica, k int) int {
		out, err := r.cli(bin, "tasks", "show", fmt.Sprintf("feed-%d", k), "--json")
		if err != nil {
			t.Fatal(err)
		}
		var d taskDetail
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, run := range d.Runs {
			if run.Outcome != "cancelled" && run.Outcome != "rejected" {
				done++
			}
		}
		return done
	}
	waitFor(t, 30*time.Second, "every task's baseline", func() bool {
		for k := range nTasks {
			if completed(rs[0], k) < 1 {
				return false
			}
		}
		return true
	})
	for k := range nTasks {
		feeds.add(fmt.Sprintf("/feed-%d.xml", k), fmt.Sprintf("new-%d", k))
	}

	// Kill the replica owning most shards.
	c := counts()
	var victim string
	for h := range byHolder {
		if victim == "" || c[h] > c[victim] {
			victim = h
		}
	}
	byHolder[victim].kill()
	took := waitFor(t, 3*ttl, "the killed replica's shards owned by the others", func() bool {
		c := counts()
		return c[""] == 0 && c[victim] == 0
	})
	t.Logf("%d shards of the killed replica owned by the others %v after SIGKILL (lease TTL %v)", c[victim], took, ttl)
	// The survivors' wait includes polling the leases from here; one TTL
	// plus that polling and a busy machine's scheduling is the bound.
	if took > ttl+time.Second {
		t.Errorf("takeover took %v, want within one lease TTL (%v)", took, ttl)
	}

	// The one-minute checks find the new items: one push each.
	var live *replica
	for h, r := range byHolder {
		if h != victim {
			live = r
		}
	}
	waitFor(t, 2*time.Minute, "every task's one-minute check", func() bool {
		for k := range nTasks {
			if completed(live, k) < 2 {
				return false
			}
		}
		return true
	})
	start := time.Now()
	for {
		if _, total, _ := sink.snapshot(); total >= nTasks {
			break
		}
		if time.Since(start) > time.Minute {
			for k := range nTasks {
				out, _ := live.cli(bin, "ledger", "show", fmt.Sprintf("feed-%d", k), "--json")
				t.Logf("feed-%d ledger: %s", k, out)
			}
			_, total, _ := sink.snapshot()
			t.Fatalf("%d pushes arrived within a minute of the checks, want %d", total, nTasks)
		}
		time.Sleep(100 * time.Millisecond)
	}
	arrivals, _, bad := sink.snapshot()
	if bad != 0 {
		t.Errorf("%d pushes with a bad signature", bad)
	}
	for id, n := range arrivals {
		if n != 1 {
			t.Errorf("webhook-id %s arrived %d times", id, n)
		}
	}
	_, overlaps := feeds.fetched()
	if len(overlaps) > 0 {
		t.Errorf("runs of one task overlapped: %v", overlaps)
	}
	for k := range nTasks {
		if n := completed(live, k); n != 2 {
			t.Errorf("feed-%d: %d completed checks, want 2: the baseline and the one-minute check", k, n)
		}
	}
}

// labelled returns the value of a series with one label on /metrics.
func (r *replica) labelled(name, value string) (float64, bool) {
	return r.metric(fmt.Sprintf("%s{replica=%q}", name, value))
}
