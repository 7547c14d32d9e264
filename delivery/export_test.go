package delivery

import "time"

// SetHandoffLinger sets how long Handoff waits for the recipient's answer
// until the test ends (restore).
func SetHandoffLinger(d time.Duration) (restore func()) {
	was := handoffLinger
	handoffLinger = d
	return func() { handoffLinger = was }
}
