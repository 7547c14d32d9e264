package main

import (
	"path/filepath"

	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/tasks/watch"
)

// openBrowser starts the page renderer (render: browser) with its
// profiles in <data-dir>/browser. Either way, it first kills the browser
// processes a herald killed on this data dir left running: the data-dir
// lock says none of them belongs to a live herald.
func (s *service) openBrowser() {
	dir := filepath.Join(s.dataDir, "browser")
	b := s.cfg.Browser
	pool, err := browser.New(browser.Options{Path: b.Path, Dir: dir, MaxParallel: b.MaxParallel,
		Timeout: b.Timeout.D(), MemoryMB: b.MemoryMB})
	if err != nil {
		n := browser.Sweep(dir)
		for _, t := range s.cfg.Tasks {
			if t.Source.Render == watch.RenderBrowser {
				s.log.Warn().Err(err).Str("task", t.ID).Msg("no browser: pages to render fail until one is installed")
				break
			}
		}
		if n > 0 {
			s.log.Info().Int("processes", n).Msg("killed browser processes left by an earlier run")
		}
		return
	}
	s.browser = pool
}
