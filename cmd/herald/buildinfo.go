package main

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is herald_build_info: always 1, its labels say which build
// runs, so an alert or a dashboard can tell versions apart after a
// rollout.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_build_info",
		Help:        "Always 1; the labels name the running build: version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "commit": buildCommit(), "goversion": runtime.Version()}})
	g.Set(1)
	return g
}
