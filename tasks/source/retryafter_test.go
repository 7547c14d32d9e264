package source

import (
	"net/http"
	"testing"
	"time"

	"github.com/herald-bridge/herald/tasks/watch"
)

// SPEC §18: a 429 or 503 carries the wait its Retry-After asks for, as
// delay seconds or an HTTP date, at most MaxRetryAfter; other answers and
// unreadable values ask nothing.
func TestRetryAfterIsCarriedOnA429Or503(t *testing.T) {
	inTwoMinutes := time.Now().Add(2*time.Minute + 30*time.Second).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name   string
		status int
		header string
		min    time.Duration
		max    time.Duration
	}{
		{"429 seconds", 429, "120", 120 * time.Second, 120 * time.Second},
		{"503 seconds", 503, "7", 7 * time.Second, 7 * time.Second},
		{"503 HTTP date", 503, inTwoMinutes, 2 * time.Minute, 2*time.Minute + 31*time.Second},
		{"date in the past", 503, "Sun, 06 Nov 1994 08:49:37 GMT", 0, 0},
		{"a week is a day", 429, "604800", MaxRetryAfter, MaxRetryAfter},
		{"unreadable", 429, "soon", 0, 0},
		{"none", 429, "", 0, 0},
		{"500 asks nothing", 500, "120", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.header != "" {
					w.Header().Set("Retry-After", c.header)
				}
				w.WriteHeader(c.status)
			}))
			_, err := fetch(t, newTestSource(t, watch.Spec{Kind: KindRSS, URL: srv.URL}, Options{}))
			wantClass(t, err, watch.Transient)
			if got := watch.WaitOf(err); got < c.min || got > c.max {
				t.Fatalf("wait %v, want %v..%v", got, c.min, c.max)
			}
		})
	}
}
