package configs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/watch"
)

// downloadPolicy checks policy.download_roots (absolute directories) and
// policy.download_hosts (host patterns).
func (v *validator) downloadPolicy() {
	for i, r := range v.cfg.Policy.DownloadRoots {
		ep := fmt.Sprintf("policy.download_roots[%d]", i)
		if !filepath.IsAbs(r) {
			v.errf(ep, "want an absolute directory, not %s", v.d.quote(ep, r))
		}
	}
	v.hosts("policy.download_hosts", v.cfg.Policy.DownloadHosts)
}

// downloadKinds are the source kinds that list course files.
var downloadKinds = []string{"canvas", "moodle"}

// download checks a task's source.download: only for a course site, a
// directory inside the task's own or under a policy root, a bounded
// max_per_run (I7), and no empty type.
func (v *validator) download(sp string, s watch.Spec) {
	d := s.Download
	if d == nil {
		return
	}
	dp := sp + ".download"
	if !slices.Contains(downloadKinds, s.Kind) {
		v.errf(dp, "downloads are for course sites (kind canvas or moodle)")
	}
	if !v.unsetErr(dp + ".dir") {
		if err := download.CheckDir(d.Dir, v.cfg.Policy.DownloadRoots); err != nil {
			v.errf(dp+".dir", "%v", err)
		}
	}
	bound := v.cfg.Policy.Limits.MaxItemsPerRun
	if bound <= 0 || bound > DefaultMaxItemsPerRun {
		bound = DefaultMaxItemsPerRun
	}
	if d.MaxPerRun < 0 || d.MaxPerRun > bound {
		v.errf(dp+".max_per_run", "want a number from 1 to %d, the per-run bound (0 or unset: the bound)", bound)
	}
	for i, t := range d.Types {
		if strings.TrimSpace(t) == "" {
			v.errf(fmt.Sprintf("%s.types[%d]", dp, i), "an empty type (want an extension such as pdf or a media type such as video/*)")
		}
	}
}
