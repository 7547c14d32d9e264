package main

import (
	"net/url"
	"strings"
)

// sourceView is a task's source as lists show it: its kind and the host
// it reads, never its path or query, which may carry tokens.
type sourceView struct {
	Kind string `json:"kind"`
	Host string `json:"host"`
}

func viewSource(kind, raw string) sourceView {
	host := ""
	if u, err := url.Parse(raw); err == nil {
		host = u.Host
	}
	return sourceView{Kind: kind, Host: host}
}

// String is "KIND HOST", or "-" for a task with neither.
func (s sourceView) String() string {
	if v := strings.TrimSpace(s.Kind + " " + s.Host); v != "" {
		return v
	}
	return "-"
}
