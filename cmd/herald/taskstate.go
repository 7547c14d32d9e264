package main

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// stateAfter is the state each state command leaves a task in; asking for
// the state a task already has is not an error.
var stateAfter = map[string]string{"pause": "paused", "resume": "active", "delete": "deleted"}

// taskState runs tasks pause|resume|delete|rebaseline ID.
func (e *env) taskState(sub, id string) int {
	if sub == "delete" {
		var d taskDetail
		if err := e.try("tasks.show", map[string]string{"id": id}, &d, 10*time.Second); err != nil {
			return e.fail(err)
		}
		if d.Request.Via == "config" {
			e.printError("declared_in_config", fmt.Sprintf("herald: %s is declared in the service's config file; a reload would bring it back.\nRemove it from the file and reload (kill -HUP), or stop it with 'herald tasks pause %s'.", id, id))
			return exitFailure
		}
	}
	var t taskView
	err := e.try("tasks."+sub, map[string]string{"id": id}, &t, 30*time.Second)
	var ae *apiError
	if want, ok := stateAfter[sub]; ok && errors.As(err, &ae) && ae.Code == "conflict" {
		var d taskDetail
		if e.try("tasks.show", map[string]string{"id": id}, &d, 10*time.Second) == nil && d.State == want {
			if e.json {
				e.printJSON(d.taskView)
			} else {
				fmt.Fprintf(e.stdout, "%s is already %s\n", d.ID, d.State)
			}
			return exitOK
		}
	}
	if err != nil {
		return e.fail(err)
	}
	if e.json {
		e.printJSON(t)
		return exitOK
	}
	if sub == "rebaseline" {
		fmt.Fprintf(e.stdout, "%s rebaselined: what its source lists now is its new baseline, pushed to no one; it stays %s\n", t.ID, t.State)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s is now %s\n", t.ID, t.State)
	return exitOK
}

// serviceURL is path on the running service's listener, as the CLI reached
// it; an unspecified listen host is reached on loopback.
func (e *env) serviceURL(path string) string {
	rec, err := e.findService()
	if err != nil {
		return "http://<listen>" + path
	}
	scheme := rec.Scheme
	if scheme == "" {
		scheme = "http"
	}
	addr := rec.Addr
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return scheme + "://" + addr + path
}
