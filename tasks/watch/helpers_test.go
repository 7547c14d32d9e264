package watch

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// feed returns n items with stable identities, digests and alternates.
func feed(n int) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = item(i)
	}
	return out
}

func item(i int) Item {
	url := fmt.Sprintf("https://news.example.edu/n/%d", i)
	return Item{
		ID:     fmt.Sprintf("guid-%05d", i),
		Title:  fmt.Sprintf("Notice %d", i),
		URL:    url,
		Digest: fmt.Sprintf("d%05d-v1", i),
		Alt:    []string{url, fmt.Sprintf("notice %d", i)},
	}
}

// compute runs Compute and fails the test if it modified prev.
func compute(t testing.TB, prev *Snapshot, items []Item, now time.Time, o Options) Diff {
	t.Helper()
	var before []byte
	if prev != nil {
		before = mustEncode(t, prev)
	}
	d := Compute(prev, items, now, o)
	if prev != nil && !bytes.Equal(before, mustEncode(t, prev)) {
		t.Fatal("Compute modified prev")
	}
	if d.Next == nil {
		t.Fatal("Compute returned no Next")
	}
	return d
}

// baselined returns the snapshot of a baseline run over items.
func baselined(t testing.TB, items []Item) *Snapshot {
	t.Helper()
	d := compute(t, nil, items, t0, Options{})
	if !d.Baseline || len(d.Events) != 0 {
		t.Fatalf("baseline: %+v", d)
	}
	return d.Next
}

func mustEncode(t testing.TB, s *Snapshot) []byte {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

// roundTrip encodes and decodes s, as the store does between runs.
func roundTrip(t testing.TB, s *Snapshot) *Snapshot {
	t.Helper()
	got, err := DecodeSnapshot(mustEncode(t, s))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return got
}

func identities(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Identity
	}
	return out
}

func assertIdentities(t testing.TB, evs []Event, want ...string) {
	t.Helper()
	got := identities(evs)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
}
