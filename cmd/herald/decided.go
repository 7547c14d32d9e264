package main

import "fmt"

// decidedLine says what `herald requests approve|reject ID` did: the
// request was decided, and what became of its task.
func decidedLine(verb, id string, t taskView) string {
	req := "request " + id
	if id == t.ID {
		req = "the request for " + id
	}
	if verb == "reject" {
		return fmt.Sprintf("Rejected %s; task %s will not run.", req, t.ID)
	}
	return fmt.Sprintf("Approved %s; task %s is %s.", req, t.ID, t.State)
}
