package bolt

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/herald-bridge/herald/store"
)

// TestI3_SendingJournalStaysSmall: records of settled attempts are dropped
// when a worker's file is rewritten, so the file stays near the size of
// what is in flight however many pushes go through, and an attempt still
// in flight keeps its record across rewrites.
func TestI3_SendingJournalStaysSmall(t *testing.T) {
	defer func(was int64) { journalCompactAt = was }(journalCompactAt)
	journalCompactAt = 16 << 10
	s := openTest(t, Options{NoSync: true}) // the journal never syncs; NoSync only speeds the ledger up here
	l, ctx, now := s.Ledger(), context.Background(), time.Now()
	if err := l.Sending(ctx, "w1", nil); err != nil {
		t.Fatal(err)
	}
	mustCommit := func(k string) {
		if _, err := l.Commit(ctx, store.RunCommit{TaskID: "t", Effects: []store.Effect{{Key: k, TaskID: "t", Recipient: "r", Kind: "test"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Begin(ctx, k, "w1", 0, now); err != nil {
			t.Fatal(err)
		}
		if err := l.Sending(ctx, "w1", []store.AttemptRef{{Key: k, N: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit("still-flying")
	// Enough settled sends to pass the rewrite threshold twice over.
	long := fmt.Sprintf("%0100d", 0)
	n := 2 * int(journalCompactAt) / (len(long) + 8)
	for i := range n {
		k := fmt.Sprintf("k%d-%s", i, long)
		mustCommit(k)
		if _, err := l.Settle(ctx, k, store.Outcome{State: store.Completed}, now); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(s.jr.path("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > journalCompactAt {
		t.Fatalf("journal is %d bytes after %d settled sends, want at most %d", fi.Size(), n, journalCompactAt)
	}
	trusted, sent, err := s.jr.read("w1")
	if err != nil || !trusted || len(sent["still-flying"]) != 1 {
		t.Fatalf("after rewrites: trusted %t, records of the attempt in flight %v, err %v", trusted, sent["still-flying"], err)
	}
}

// TestI3_SendingJournalTrustedOnTheSameBoot: on the boot that wrote it,
// the journal holds every record the killed process wrote (a torn last
// line was never followed by a send); after a reboot an unsynced record
// may be gone, so the journal is not trusted and every interrupted
// attempt counts as maybe sent.
func TestI3_SendingJournalTrustedOnTheSameBoot(t *testing.T) {
	j := &journal{dir: t.TempDir(), boot: "boot-a", workers: map[string]*workerJournal{}}
	body := "boot boot-a\n1 one\n2 two\n1 torn-"
	if err := os.WriteFile(j.path("w"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		boot    string
		trusted bool
		want    []string
	}{
		{"boot-a", true, []string{"one", "two"}},
		{"boot-b", false, nil},
		{"", false, nil},
	} {
		j.boot = tc.boot
		trusted, sent, err := j.read("w")
		if err != nil || trusted != tc.trusted {
			t.Fatalf("boot %q: trusted %t, err %v; want trusted %t", tc.boot, trusted, err, tc.trusted)
		}
		var got []string
		for _, k := range []string{"one", "two", "torn-", "1"} {
			if len(sent[k]) > 0 {
				got = append(got, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("boot %q: recorded %v, want %v", tc.boot, got, tc.want)
		}
	}
}
