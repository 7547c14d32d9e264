//go:build pprof

package main

// Built with -tags pprof, herald serves net/http/pprof on the loopback
// address in HERALD_PPROF (for example 127.0.0.1:6060), for profiling under
// load. Release builds carry none of it.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("HERALD_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
