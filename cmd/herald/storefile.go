package main

import (
	"errors"
	"fmt"

	"github.com/herald-bridge/herald/store/bolt"
)

// Classes of a store file herald will not serve, in logs and, for
// restore, as the --json error code.
const (
	codeDamagedStore       = "damaged_store"
	codeInterruptedRestore = "interrupted_restore"
)

// openBolt opens the embedded store at path. A file it refuses is
// explained so a person can act on it: what is wrong, that herald
// changed nothing, and what to do next. When a restore that did not
// finish left its copy beside a store, the store is served and the copy
// is reported.
func (s *service) openBolt(path string) (*bolt.Store, error) {
	st, err := bolt.Open(path, bolt.Options{Retention: s.cfg.Store.Retention.D()})
	var damaged *bolt.DamagedError
	switch {
	case errors.As(err, &damaged):
		s.log.Error().Str("class", codeDamagedStore).Str("store", path).Str("damage", damaged.Kind).
			Str("detail", damaged.Detail).Msg("the store file is damaged; herald will not start on it")
		return nil, fmt.Errorf("%w\nherald changed nothing in the file. Restore your latest backup into "+
			"a new data dir (herald restore BACKUP --data-dir NEW_DIR) and start herald there, or move the file away "+
			"to start with an empty store", damaged)
	case errors.Is(err, bolt.ErrInterruptedRestore):
		copyPath := bolt.RestoringPath(path)
		s.log.Error().Str("class", codeInterruptedRestore).Str("store", path).Str("leftover", copyPath).
			Msg("a restore did not finish; herald will not start an empty store beside its copy")
		return nil, fmt.Errorf("a herald restore was stopped before it finished: it left %s and no store %s.\n"+
			"herald starts no empty store beside the copy. Run the restore again "+
			"(herald restore BACKUP --data-dir %s), which replaces the copy, or remove %s to start with an empty store",
			copyPath, path, s.dataDir, copyPath)
	case err != nil:
		return nil, err
	}
	if left := st.Leftover(); left != "" {
		s.log.Warn().Str("class", codeInterruptedRestore).Str("store", path).Str("leftover", left).
			Str("todo", "remove "+left+"; to serve that backup instead, restore it into a new data dir").
			Msg("a restore that did not finish left its copy beside the store; herald serves the store it had and leaves the copy alone")
	}
	return st, nil
}
