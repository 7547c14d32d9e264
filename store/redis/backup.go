package redis

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The store's keys start with its prefix P (plain keys) or {P} (the keys
// scripts share one cluster slot under). A backup is every such key as
// Redis DUMPs it, with its remaining time to live, read by one script:
// Redis runs a script alone, so the copy is one consistent view of the
// store while the service goes on (docs/operations.md, Export, import and backup).
// The price is that Redis answers nothing else while the script reads
// (BenchmarkBackup10k); on Redis Cluster the script sees one node only,
// so a cluster is not backed up this way.
var scriptBackup = goredis.NewScript(`
local out = {}
for _, pat in ipairs(ARGV) do
  for _, k in ipairs(redis.call('KEYS', pat)) do
    out[#out+1] = k
    out[#out+1] = redis.call('PTTL', k)
    out[#out+1] = redis.call('DUMP', k)
  end
end
return out
`)

// dumpMagic starts a Redis snapshot file.
const dumpMagic = "herald-redis-dump 1\n"

// Bounds a restore holds a snapshot's frames to.
const (
	maxKeyLen  = 64 << 10
	maxDumpLen = 512 << 20
)

// globEscape quotes s for a KEYS pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Backup writes every key of the store to w as one consistent snapshot.
func (s *Store) Backup(ctx context.Context, w io.Writer) error {
	res, err := scriptBackup.Run(ctx, s.rdb, nil, globEscape(s.keys.prefix)+"*", globEscape(s.keys.tagged)+"*").Slice()
	if err != nil {
		return wrap("backup", err)
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(dumpMagic); err != nil {
		return err
	}
	var num [binary.MaxVarintLen64]byte
	for i := 0; i+2 < len(res); i += 3 {
		key, _ := res[i].(string)
		ttl, _ := res[i+1].(int64)
		dump, _ := res[i+2].(string)
		if key == "" || dump == "" {
			continue // gone between KEYS and DUMP cannot happen in a script; be safe
		}
		bw.Write(num[:binary.PutUvarint(num[:], uint64(len(key)))])
		bw.WriteString(key)
		bw.Write(num[:binary.PutVarint(num[:], ttl)])
		bw.Write(num[:binary.PutUvarint(num[:], uint64(len(dump)))])
		bw.WriteString(dump)
	}
	return bw.Flush()
}

// ErrNotEmpty means a restore found keys under the store's prefix.
var ErrNotEmpty = errors.New("the Redis database already holds herald keys under this prefix")

// Restore writes the keys of a snapshot (Backup) into the Redis server at
// url under prefix (the snapshot's own prefix from is replaced by it). It
// refuses when any key under prefix exists, and RESTORE refuses to replace
// a key that appears meanwhile. It returns how many keys it restored.
func Restore(ctx context.Context, url, prefix, from string, r io.Reader) (int, error) {
	ro, err := goredis.ParseURL(url)
	if err != nil {
		return 0, fmt.Errorf("redis store: parse url: %w", err)
	}
	rdb := goredis.NewClient(ro)
	defer rdb.Close()
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	for _, pat := range []string{globEscape(prefix) + "*", globEscape("{"+prefix+"}") + "*"} {
		if err := none(ctx, rdb, pat); err != nil {
			return 0, err
		}
	}
	br := bufio.NewReader(r)
	head := make([]byte, len(dumpMagic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != dumpMagic {
		return 0, errors.New("redis store: restore: not a snapshot of a Redis store")
	}
	n := 0
	for {
		key, ttl, dump, err := readFrame(br)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("redis store: restore: %w", err)
		}
		switch {
		case strings.HasPrefix(key, from):
			key = prefix + key[len(from):]
		case strings.HasPrefix(key, "{"+from+"}"):
			key = "{" + prefix + "}" + key[len(from)+2:]
		default:
			return n, errors.New("redis store: restore: a key outside the snapshot's prefix")
		}
		if ttl == -2 || strings.HasPrefix(key, "{"+prefix+"}lease:h:") || key == "{"+prefix+"}sched:live" {
			// A lease is a running process's ownership, and the live set
			// the replicas that share the shards: a restored store has no
			// running process, so both are left out, and the new service
			// neither waits for them to expire nor takes only a share of
			// the shards. Epoch counters (lease:n:) come along, so epochs
			// still only grow (I5).
			continue
		}
		if ttl < 0 {
			ttl = 0
		}
		if err := rdb.Do(ctx, "RESTORE", key, ttl, dump).Err(); err != nil {
			return n, wrap("restore", err)
		}
		n++
	}
}

// none reports ErrNotEmpty when a key matches pat.
func none(ctx context.Context, rdb *goredis.Client, pat string) error {
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pat, 1000).Result()
		if err != nil {
			return wrap("restore", err)
		}
		if len(keys) > 0 {
			return ErrNotEmpty
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func readFrame(br *bufio.Reader) (key string, ttl int64, dump string, err error) {
	kl, err := binary.ReadUvarint(br)
	if err != nil {
		return "", 0, "", err // io.EOF at a frame boundary: the end
	}
	if kl == 0 || kl > maxKeyLen {
		return "", 0, "", errors.New("a key of unexpected length")
	}
	kb := make([]byte, kl)
	if _, err := io.ReadFull(br, kb); err != nil {
		return "", 0, "", io.ErrUnexpectedEOF
	}
	if ttl, err = binary.ReadVarint(br); err != nil {
		return "", 0, "", io.ErrUnexpectedEOF
	}
	dl, err := binary.ReadUvarint(br)
	if err != nil || dl == 0 || dl > maxDumpLen {
		return "", 0, "", errors.New("a value of unexpected length")
	}
	db := make([]byte, dl)
	if _, err := io.ReadFull(br, db); err != nil {
		return "", 0, "", io.ErrUnexpectedEOF
	}
	return string(kb), ttl, string(db), nil
}
