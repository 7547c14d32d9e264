package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/store/redis"
)

// The corpus is generated: words a student and herald would use, mixed
// Chinese and English, with a tag of one turn in a thousand that makes a
// rare query.
var (
	zhWords = strings.Fields(`考试 通知 作业 截止 课程 期末 提醒 关注 网页 日历 订阅 老师 同学 图书馆 实验 报告 成绩 选课
		讲座 会议 明天 下周 上午 下午 教室 校园 新闻 活动 比赛 奖学金 论文 答辩 食堂 宿舍 放假 开学 补考 学分 助教 公告`)
	enWords = strings.Fields(`exam notice homework deadline course watch calendar feed lecture library grade lab report
		tomorrow campus news event meeting please remind every hour daily page check schedule today week assignment quiz
		project slides syllabus room office hours seminar thesis`)
	replies = []string{"好的，已记下。", "Request r-%04x: watch https://news.example.edu/feed.xml every 1h.", "You have no tasks. Start one with /watch <url>.",
		"已检查 t-%04x：无变化，共 12 条。", "I understand commands. Try /watch https://news.example.edu/feed.xml every 1h, or /tasks."}
)

func sentence(r *rand.Rand, i int) (string, string) {
	var b strings.Builder
	n := 4 + r.IntN(14)
	for j := range n {
		if r.IntN(2) == 0 {
			b.WriteString(zhWords[r.IntN(len(zhWords))])
			if r.IntN(3) == 0 {
				b.WriteString("，")
			}
		} else {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(enWords[r.IntN(len(enWords))])
		}
	}
	if i%1000 == 0 {
		fmt.Fprintf(&b, " tag%d", i/1000)
	}
	reply := replies[r.IntN(len(replies))]
	if strings.Contains(reply, "%") {
		reply = fmt.Sprintf(reply, i)
	}
	return b.String(), reply
}

// queries are a mix of what people search: a Chinese pair, a Chinese
// phrase of two words, one character, an English word, two English
// words, and a rare tag.
func queries(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		switch i % 6 {
		case 0:
			out[i] = zhWords[r.IntN(len(zhWords))]
		case 1:
			out[i] = zhWords[r.IntN(len(zhWords))] + zhWords[r.IntN(len(zhWords))]
		case 2:
			out[i] = string([]rune(zhWords[r.IntN(len(zhWords))])[:1])
		case 3:
			out[i] = enWords[r.IntN(len(enWords))]
		case 4:
			out[i] = enWords[r.IntN(len(enWords))] + " " + enWords[r.IntN(len(enWords))]
		default:
			out[i] = "tag" + strconv.Itoa(r.IntN(100))
		}
	}
	return out
}

const (
	benchTurns    = 100_000
	benchLogs     = 10 // 10,000 turns each: the default bound of one log
	benchWriters  = 4  // concurrent chats
	benchSearches = 600
)

// runHistoryBench indexes benchTurns turns through a Keeper, then runs
// benchSearches searches, and reports time per turn indexed, search p50
// and p99, and what each turn costs the store in bytes (size()).
func runHistoryBench(b *testing.B, st store.History, size func() int64) {
	ctx := context.Background()
	base := time.Now().Add(-24 * time.Hour)
	var clockMu sync.Mutex
	n := 0
	now := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		n++
		return base.Add(time.Duration(n) * time.Millisecond)
	}
	k, err := New(Options{Store: st, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	before := size()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range benchWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := w; i < benchTurns; i += benchWriters {
				text, reply := sentence(r, i)
				log := fmt.Sprintf("telegram:%d", 1000+i%benchLogs)
				if err := k.Record(ctx, log, "telegram:chat:1", false, text, reply); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	indexed := time.Since(start)
	b.ReportMetric(float64(indexed.Nanoseconds())/benchTurns, "ns/turn-indexed")
	b.ReportMetric(float64(size()-before)/benchTurns, "bytes/turn")

	r := rand.New(rand.NewPCG(42, 42))
	qs := queries(r, benchSearches)
	lat := make([]time.Duration, 0, len(qs))
	hits := 0
	for i, q := range qs {
		t0 := time.Now()
		p, err := k.Search(ctx, fmt.Sprintf("telegram:%d", 1000+i%benchLogs), q, 1+i%3)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(p.Turns)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs/search-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs/search-p99")
	b.ReportMetric(float64(hits)/float64(len(qs)), "hits/search")
}

// BenchmarkHistory100kBolt: run with -benchtime=1x (one pass is 100,000
// turns). Group commit without fsync, as a bulk load measures the index,
// not the disk.
func BenchmarkHistory100kBolt(b *testing.B) {
	for range b.N {
		path := filepath.Join(b.TempDir(), "herald.db")
		s, err := bolt.Open(path, bolt.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		runHistoryBench(b, s.History(), func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				return 0
			}
			return fi.Size()
		})
		_ = s.Close()
	}
}

// BenchmarkHistory100kRedis: the same on Redis (HERALD_TEST_REDIS_URL),
// bytes as Redis's own MEMORY USAGE of the keys written.
func BenchmarkHistory100kRedis(b *testing.B) {
	url := os.Getenv("HERALD_TEST_REDIS_URL")
	if url == "" {
		b.Skip("HERALD_TEST_REDIS_URL not set")
	}
	for range b.N {
		prefix := fmt.Sprintf("herald-bench-%d:", time.Now().UnixNano())
		s, err := redis.Open(context.Background(), url, redis.Options{KeyPrefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		ro, _ := goredis.ParseURL(url)
		rdb := goredis.NewClient(ro)
		usage := func() int64 {
			ctx := context.Background()
			var total int64
			iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				n, _ := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
				total += n
			}
			return total
		}
		runHistoryBench(b, s.History(), usage)
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				rdb.Unlink(ctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			rdb.Unlink(ctx, batch...)
		}
		rdb.Del(ctx, "{"+prefix+"}schema")
		_ = rdb.Close()
		_ = s.Close()
	}
}
