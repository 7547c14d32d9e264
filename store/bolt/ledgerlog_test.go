package bolt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// noCheckpoints keeps logged effects in memory and the log only, as when
// a process is killed before its next checkpoint.
func noCheckpoints(t *testing.T) {
	n, every := checkpointEffects, checkpointEvery
	checkpointEffects, checkpointEvery = 1<<30, time.Hour
	t.Cleanup(func() { checkpointEffects, checkpointEvery = n, every })
}

// kill stops s the way SIGKILL would, as far as the files are concerned:
// no last checkpoint, nothing flushed that was not already synced.
func kill(s *Store) {
	s.closeOnce.Do(func() { close(s.stopPrune) })
	<-s.prunerDone
	close(s.ov.stop)
	<-s.ov.doneCP
	s.gc.close()
	s.ov.log.close()
	s.jr.close()
	_ = s.db.Close()
}

func reopenAfterKill(t *testing.T, s *Store) *Store {
	t.Helper()
	kill(s)
	s2, err := Open(s.path, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

func handOff(t *testing.T, s *Store, keys ...string) {
	t.Helper()
	var es []store.Effect
	for _, k := range keys {
		es = append(es, store.Effect{Key: k, Recipient: "webhook:bench", Kind: "inbound.event", Payload: []byte(`{"title":"` + k + `"}`)})
	}
	res, err := s.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "hook:bench", Worker: "w1", Effects: es})
	if err != nil || len(res.Claimed) != len(keys) {
		t.Fatalf("claim %v: %+v, %v", keys, res, err)
	}
}

func settled(t *testing.T, s *Store, key string) {
	t.Helper()
	if _, err := s.Ledger().Settle(context.Background(), key, store.Outcome{State: store.Completed, ProviderID: "p-" + key}, time.Now()); err != nil {
		t.Fatalf("settle %s: %v", key, err)
	}
}

func wantState(t *testing.T, s *Store, key string, state store.EffectState, inFlight bool) {
	t.Helper()
	e, err := s.Ledger().Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if e.State != state || e.InFlight != inFlight || string(e.Payload) != `{"title":"`+key+`"}` {
		t.Fatalf("%s = %s in flight %t, payload %s; want %s in flight %t", key, e.State, e.InFlight, e.Payload, state, inFlight)
	}
}

// An answered claim and an answered outcome are on disk when their call
// returns, though only the ledger log holds them: a kill before the
// checkpoint loses neither, and the claim still refuses a second claim (I1).
func TestI1_LoggedClaimsAndOutcomesSurviveAKill(t *testing.T) {
	noCheckpoints(t)
	s := openTest(t, Options{})
	handOff(t, s, "a", "b")
	settled(t, s, "a")

	s = reopenAfterKill(t, s)
	wantState(t, s, "a", store.Completed, false)
	wantState(t, s, "b", store.Pending, true)
	res, err := s.Ledger().Commit(context.Background(), store.RunCommit{TaskID: "hook:bench",
		Effects: []store.Effect{{Key: "a"}, {Key: "b"}}})
	if err != nil || len(res.Claimed) != 0 {
		t.Fatalf("claims after the kill: %+v, %v", res, err)
	}
	// The attempt in flight at the kill is recovered like any other (I3).
	got, err := s.Ledger().Recover(context.Background(), store.Recovery{}, time.Now())
	if err != nil || len(got) != 1 || got[0].Key != "b" || got[0].State != store.Unknown {
		t.Fatalf("recovered %+v, %v", got, err)
	}
}

// A record cut short by the kill (its write never finished, so its call
// never returned) ends the replay; the records before it stand.
func TestI1_TornLastLogRecordIsIgnored(t *testing.T) {
	noCheckpoints(t)
	s := openTest(t, Options{})
	handOff(t, s, "a")
	settled(t, s, "a")
	path, off := s.ov.log.paths[s.ov.log.cur], s.ov.log.off
	kill(s)
	// Tear the last record (the settle): its last bytes never reached the disk.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 3), off-3); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	s2, err := Open(s.path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	wantState(t, s2, "a", store.Pending, true)
}

// Checkpoints turn the log over between its two files. Records of a turn
// already checkpointed are never replayed over newer state, whether the
// file took it through the log or directly.
func TestI3_CheckpointedLogIsNotReplayedOverNewerState(t *testing.T) {
	noCheckpoints(t)
	s := openTest(t, Options{})
	handOff(t, s, "a")
	if err := s.ov.checkpoint(); err != nil { // a: in the file, in flight
		t.Fatal(err)
	}
	settled(t, s, "a") // not logged any more: settled in the file
	s = reopenAfterKill(t, s)
	wantState(t, s, "a", store.Completed, false)

	handOff(t, s, "b")
	if err := s.ov.checkpoint(); err != nil {
		t.Fatal(err)
	}
	handOff(t, s, "x")
	if err := s.ov.checkpoint(); err != nil {
		t.Fatal(err)
	}
	handOff(t, s, "c") // back in the first file, over b's old records
	if len(s.ov.m) != 1 {
		t.Fatalf("logged effects after two checkpoints: %d, want 1", len(s.ov.m))
	}

	s = reopenAfterKill(t, s)
	wantState(t, s, "a", store.Completed, false)
	wantState(t, s, "b", store.Pending, true)
	wantState(t, s, "x", store.Pending, true)
	wantState(t, s, "c", store.Pending, true)
	list, err := s.Ledger().List(context.Background(), "hook:bench", 0)
	if err != nil || len(list) != 4 || list[0].Key != "c" || list[3].Key != "a" {
		t.Fatalf("list after replay = %v, %v", keysOf(list), err)
	}
	if _, err := os.Stat(filepath.Join(s.jr.dir, "ledger-1.log")); err != nil {
		t.Fatalf("second log file: %v", err)
	}
}

func keysOf(es []store.Effect) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}
