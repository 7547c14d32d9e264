package tasks

import (
	"net/url"
	"strings"
	"time"
)

// Why a task's next check is when it is (SPEC §18).
const (
	NextBySchedule   = "schedule"
	NextByRetryAfter = "retry_after" // the source's host asked to wait (Retry-After)
	NextByBackoff    = "backoff"     // failed checks in a row space the checks out
)

// MaxBackoff is the longest a failing task's checks are spaced apart.
const MaxBackoff = 6 * time.Hour

// NextCheck is when a task is checked next, and why then.
type NextCheck struct {
	At       time.Time `json:"at"`
	Why      string    `json:"why"`
	Host     string    `json:"host,omitempty"`     // retry_after: the host that asked
	Failures int       `json:"failures,omitempty"` // backoff: failed checks in a row
}

// Backoff is when a task that failed failures checks in a row, the last
// ending at end, is checked next when its schedule says next: the wait
// the schedule gives doubles with each failure after the first, up to
// MaxBackoff, and never comes sooner than the schedule. It reports
// whether the backoff put the check later than the schedule.
func Backoff(end, next time.Time, failures int) (time.Time, bool) {
	wait := next.Sub(end)
	if failures < 2 || wait <= 0 || wait >= MaxBackoff {
		return next, false
	}
	for range failures - 1 {
		wait *= 2
		if wait >= MaxBackoff {
			wait = MaxBackoff
			break
		}
	}
	if at := end.Add(wait); at.After(next) {
		return at, true
	}
	return next, false
}

// hostHolds is what of the scheduler says a host's checks are held back
// (tasks/scheduler).
type hostHolds interface {
	HostHeld(rawURL string) (time.Time, bool)
}

// Next says when t is checked next and why; a zero At when it is not
// planned (paused, done, waiting for approval).
func (m *Manager) Next(t *Task) NextCheck {
	if t.State != Active || t.NextRun.IsZero() {
		return NextCheck{}
	}
	n := NextCheck{At: t.NextRun, Why: NextBySchedule}
	if t.Postponed != "" && t.PostponedTo.Equal(t.NextRun) {
		n.Why, n.Host = t.Postponed, t.HeldBy
		if t.Postponed == NextByBackoff {
			n.Failures = t.Failures
		}
	}
	if h, ok := m.scheduler().(hostHolds); ok {
		if until, held := h.HostHeld(t.Source.URL); held && until.After(n.At) {
			n = NextCheck{At: until, Why: NextByRetryAfter, Host: SourceHost(t.Source.URL)}
		}
	}
	return n
}

// SourceHost is the host of a source URL, lower case ("" when unreadable).
func SourceHost(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
