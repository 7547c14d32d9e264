package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/store/backup"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/datadir"
	"github.com/herald-bridge/herald/store/redis"
)

// cmdRestore writes a backup into a fresh data dir (and, with the redis
// driver, an empty key prefix) while no herald serves it: the one
// command besides serve that opens the store itself, because there is no
// service to ask. It holds the data dir's lock throughout, so a service
// cannot start on it midway.
func cmdRestore(e *env, args []string) int {
	file, code, ok := e.parseOne(args, "want exactly one FILE written by herald backup")
	if !ok {
		return code
	}
	cfg, err := configs.Load(e.config)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitFailure
	}
	n, err := restore(cfg, e.dataDir, file)
	var damaged *bolt.DamagedError
	if errors.As(err, &damaged) {
		e.printError(codeDamagedStore, fmt.Sprintf("herald: the store in backup %s is damaged (%s: %s).\n"+
			"Nothing was restored: data dir %s is as it was. Restore an older backup, or take a new one from the service it came from.",
			file, damaged.Kind, damaged.Detail, e.dataDir))
		return exitFailure
	}
	if err != nil {
		return e.fail(err)
	}
	if e.json {
		e.printJSON(map[string]any{"restored": file, "data_dir": e.dataDir, "store": cfg.Store.Driver, "keys": n})
		return exitOK
	}
	fmt.Fprintf(e.stdout, "restored %s into data dir %s (store %s); start herald on it with herald serve\n", file, e.dataDir, cfg.Store.Driver)
	return exitOK
}

func restore(cfg *configs.Config, dir, file string) (int, error) {
	r, err := backup.Open(file)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	driver := cfg.Store.Driver
	if driver != configs.DriverRedis {
		driver = "bolt"
	}
	if r.Manifest.Driver != driver {
		return 0, fmt.Errorf("%w: the backup is of a %s store and the config names %s", errRestore, r.Manifest.Driver, driver)
	}
	lock, err := datadir.Lock(dir)
	if errors.Is(err, datadir.ErrLocked) {
		return 0, fmt.Errorf("%w: %w; stop it first", errRestore, err)
	}
	if err != nil {
		return 0, err
	}
	defer lock.Unlock()
	var leftovers []string // a stopped restore's, which this one replaces
	if driver == "bolt" {
		for _, p := range bolt.RestoreLeftovers(cfg.Store.BoltPath(dir)) {
			if filepath.Dir(p) == filepath.Clean(dir) {
				leftovers = append(leftovers, filepath.Base(p))
			}
		}
	}
	if err := emptyDataDir(dir, leftovers...); err != nil {
		return 0, err
	}
	snap, err := r.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	if driver == "bolt" {
		return 0, bolt.Restore(cfg.Store.BoltPath(dir), snap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	n, err := redis.Restore(ctx, cfg.Store.Redis.URL, cfg.Store.Redis.KeyPrefix, r.Manifest.Prefix, snap)
	if errors.Is(err, redis.ErrNotEmpty) {
		return n, fmt.Errorf("%w: %w", errRestore, err)
	}
	return n, err
}

// offlineBackup backs up the store of a data dir no herald serves,
// holding its lock meanwhile: the copy moving machines wants, since
// nothing is sent after it was taken.
func offlineBackup(e *env, out string) (backupView, error) {
	cfg, err := configs.Load(e.config)
	if err != nil {
		return backupView{}, err
	}
	lock, err := datadir.Lock(e.dataDir)
	if errors.Is(err, datadir.ErrLocked) {
		return backupView{}, fmt.Errorf("%w; it did not answer the backup request", err)
	}
	if err != nil {
		return backupView{}, err
	}
	defer lock.Unlock()
	if path := cfg.Store.BoltPath(e.dataDir); cfg.Store.Driver != configs.DriverRedis {
		if _, err := os.Stat(path); err != nil {
			return backupView{}, fmt.Errorf("no herald is running for data dir %s, and it holds no store to back up", e.dataDir)
		}
	}
	s := &service{cfg: cfg, dataDir: e.dataDir}
	if err := s.openStore(); err != nil {
		return backupView{}, err
	}
	defer s.store.Close()
	v, err := writeBackup(context.Background(), s.store, cfg.Store, out)
	v.Offline = true
	return v, err
}

// emptyDataDir refuses a data dir holding anything but its lock file
// and the names in leftovers.
func emptyDataDir(dir string, leftovers ...string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(16)
		for _, n := range names {
			if n != datadir.LockFile && !slices.Contains(leftovers, n) {
				return fmt.Errorf("%w: data dir %s is not empty (it holds %s); restore into a new one", errRestore, dir, n)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
