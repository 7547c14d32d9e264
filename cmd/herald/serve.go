package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	tgchan "github.com/herald-bridge/herald/channels/telegram"
	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/datadir"
	"github.com/herald-bridge/herald/store/redis"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/scheduler"
	"github.com/herald-bridge/herald/tasks/source/browser"
	"github.com/herald-bridge/herald/webhook"
)

// drainTimeout bounds graceful shutdown.
const drainTimeout = 4 * time.Second

// newLogger logs JSON, or a console format on a terminal, at
// HERALD_LOG_LEVEL (default info).
func newLogger(w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(os.Getenv("HERALD_LOG_LEVEL"))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05"}).Level(level).With().Timestamp().Logger()
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

func cmdCheckConfig(e *env, args []string) int {
	if _, code, ok := e.parse(args); !ok {
		return code
	}
	cfg, err := configs.Load(e.config)
	if err != nil {
		if e.json {
			printConfigErrorJSON(e, err)
		} else {
			fmt.Fprintln(e.stderr, err)
		}
		return exitFailure
	}
	if e.json {
		warnings := append([]string{}, cfg.Warnings...)
		e.printJSON(map[string]any{"file": e.config, "ok": true, "recipients": len(cfg.Recipients), "inbound": len(cfg.Inbound),
			"tasks": len(cfg.Tasks), "store": cfg.Store.Driver, "warnings": warnings})
		return exitOK
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stderr, "%s: warning: %s\n", e.config, w)
	}
	fmt.Fprintf(e.stdout, "%s: ok — %d recipients, %d inbound hooks, %d tasks, store %s\n", e.config, len(cfg.Recipients), len(cfg.Inbound), len(cfg.Tasks), cfg.Store.Driver)
	return exitOK
}

// printConfigErrorJSON writes a config error as {"error":{"code",
// "message","problems":[{"file","line","message"}]}}.
func printConfigErrorJSON(e *env, err error) {
	type problem struct {
		File    string `json:"file"`
		Line    int    `json:"line,omitempty"`
		Message string `json:"message"`
	}
	out := struct {
		Code     string    `json:"code"`
		Message  string    `json:"message"`
		Problems []problem `json:"problems"`
	}{Code: "invalid_config", Message: err.Error(), Problems: []problem{}}
	var ce *configs.Error
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			out.Problems = append(out.Problems, problem{File: p.File, Line: p.Line, Message: p.Msg})
		}
	} else {
		out.Code = "unreadable_config"
	}
	b, _ := json.Marshal(map[string]any{"error": out})
	fmt.Fprintln(e.stderr, string(b))
}

func cmdServe(e *env, args []string) int {
	if _, code, ok := e.parse(args); !ok {
		return code
	}
	log := newLogger(e.stderr)
	tuneGC()
	if err := serve(e, log); err != nil {
		log.Error().Err(err).Msg("herald stopped")
		fmt.Fprintf(e.stderr, "herald: %v\n", err) // plainly, for people, beside the log line
		return exitFailure
	}
	return exitOK
}

// gcPercent is the collector's target for serve when GOGC is not set.
// herald's live heap is a few MiB, so Go's default (100) collects every
// few MiB of allocation: several hundred cycles a second under inbound
// load. At 400 the service spends about 20% less CPU per event and
// accepts 15-25% more events per second, with the heap still in tens of
// MiB. GOGC in the environment wins, as usual.
const gcPercent = 400

// gcSoftLimit keeps the higher target from multiplying a large live heap
// (several big feeds parsed at once) into hundreds of MiB: near this
// total the collector runs more often again. GOMEMLIMIT wins.
const gcSoftLimit = 384 << 20

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// limitMemory sets the soft limit once the service is assembled, not
// before: reading a config file of many tasks holds its whole syntax tree
// for a moment, and a limit below that would make the collector run
// without pause through the start. With many tasks the live heap itself
// grows (a few KiB per task), so the limit is never below three times
// the heap the start left live.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.SetMemoryLimit(max(gcSoftLimit, 3*int64(ms.HeapAlloc)))
}

// service is the running herald, assembled from config.
type service struct {
	cfg      *configs.Config
	log      zerolog.Logger
	dataDir  string
	holder   string
	store    store.Store
	manager  *tasks.Manager // the catalog
	engine   *engine.Engine
	dispatch *delivery.Dispatcher
	table    *delivery.Table
	prefs    *chatprefs.Store
	notices  *assistant.Notices // the model's part in notices, following the assistant
	hooks    *webhook.Hooks
	server   *webhook.Server
	channels *channelSet
	feishu   *feishuApp // the Feishu app's shared token source (build.go)
	registry *prometheus.Registry
	metrics  *serviceMetrics // metrics.go
	ownerG   prometheus.Gauge
	mu       sync.Mutex

	routeSet *egress.Routes // the routes in force (routes.go); under mu
	browser  *browser.Pool  // renders pages (render: browser); nil: none found
}

func serve(e *env, log zerolog.Logger) error {
	// Signals are ours from the first moment: an early SIGHUP or SIGTERM
	// waits for the loop below instead of killing a half-started process.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	coord := configs.NewCoordinator(e.config, log)
	if err := coord.Load(); err != nil {
		var ce *configs.Error
		if errors.As(err, &ce) {
			fmt.Fprintln(e.stderr, ce.Error())
		}
		return fmt.Errorf("configuration is not valid")
	}
	cfg := coord.Current() // the coordinator has logged its warnings
	lock, err := datadir.Lock(e.dataDir)
	if err != nil {
		return err
	}
	defer lock.Unlock()

	s := &service{cfg: cfg, log: log, dataDir: e.dataDir, holder: holderID()}
	if err := s.openStore(); err != nil {
		return err
	}
	defer s.store.Close()
	s.takeOverLeases()
	s.openBrowser()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := s.assemble(ctx); err != nil {
		return err
	}
	coord.Subscribe(func(c *configs.Config) error { return s.reload(ctx, c) })
	limitMemory()

	if err := s.server.Listen(); err != nil {
		return listenError(err, cfg.Server.Listen, e.config)
	}
	// The data dir's identity, made once its store opened: a serve that
	// stops earlier leaves the data dir as it found it.
	instance, err := datadir.Instance(e.dataDir)
	if err != nil {
		return err
	}
	token := datadir.NewToken()
	s.mountAdmin(token, coord)
	scheme := "http"
	if cfg.Server.TLS.Enabled() {
		scheme = "https"
	}
	if err := datadir.WriteAdmin(e.dataDir, datadir.AdminRecord{Addr: s.server.Addr(), Token: token, PID: os.Getpid(), Scheme: scheme, Instance: instance}); err != nil {
		return fmt.Errorf("write the admin access record: %w", err)
	}
	defer datadir.RemoveAdmin(e.dataDir)
	rememberDataDir(e.dataDir) // the CLI finds this service from any directory
	defer forgetDataDir(e.dataDir)

	runCtx, cancelRun := context.WithCancel(ctx)
	parts := &runGroup{log: log}
	parts.add("manager", s.engine.Run)
	parts.add("delivery", s.dispatch.Run)
	parts.add("liveness", s.keepAlive)
	s.channels.start(runCtx, parts.add)
	finished := make(chan struct{})
	go func() { _ = parts.Run(runCtx); close(finished) }() // each part's error is logged as it stops

	srvCtx, stopServer := context.WithCancel(context.Background())
	srvErr := make(chan error, 1)
	go func() { srvErr <- s.server.Serve(srvCtx, drainTimeout/2) }()
	log.Info().Str("listen", s.server.Addr()).Str("store", cfg.Store.Driver).Str("replica", s.holder).Msg("herald is serving")
	log.Info().Str("chat", "herald chat --as admin").Str("console", "herald console login").Str("status", "herald status").
		Str("setup", "docs/setup.md").Str("url", scheme+"://"+s.server.Addr()+"/").
		Msg("next steps: talk to herald with `herald chat`, open the browser console with `herald console login`, connect Telegram or Feishu (docs/setup.md)")

	for done := false; !done; {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if err := coord.Reload(); err != nil {
					log.Error().Msg("config reload failed; the previous configuration stays in force")
				} else {
					log.Info().Msg("configuration reloaded")
				}
				continue
			}
			log.Info().Str("signal", sig.String()).Msg("shutting down")
			done = true
		case err := <-srvErr:
			stopServer()
			cancelRun()
			<-finished
			return err
		}
	}
	// One deadline for the whole shutdown: stop accepting and drain
	// in-flight requests (at most half of it), then stop the workers with
	// what is left. Work cut off here resumes on the next start; an attempt
	// cut off mid-send recovers as unknown (I3).
	deadline := time.Now().Add(drainTimeout)
	stopServer()
	<-srvErr
	cancelRun()
	select {
	case <-finished:
	case <-time.After(time.Until(deadline)):
		log.Warn().Msg("some work did not finish in time; it resumes on the next start")
	}
	return nil
}

// localLeases are the leases a process takes on its store. On the
// embedded store the data-dir lock makes this process the only one, so a
// lease still held by another holder was left by a process that died
// without releasing it (SIGKILL, power loss).
var localLeases = []string{scheduler.SchedulerLease, tasks.CreateLease, tgchan.PollerLease}

// takeOverLeases releases, on the embedded store, the leases a dead
// predecessor still holds, so scheduling and the recovery of its
// interrupted pushes start at once instead of after the lease expires.
// Replicas on a shared store wait for expiry as they must.
func (s *service) takeOverLeases() {
	if s.shared() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range localLeases {
		l, err := s.store.Leases().Current(ctx, name)
		if err != nil || l.Holder == "" || l.Holder == s.holder || !time.Now().Before(l.Expires) {
			continue
		}
		if err := s.store.Leases().Release(ctx, l); err != nil {
			s.log.Warn().Err(err).Str("lease", name).Msg("cannot take over a lease left by a stopped process; waiting for it to expire")
			continue
		}
		s.log.Info().Str("lease", name).Msg("took over a lease left by a process that stopped without releasing it")
	}
}

func (s *service) openStore() error {
	switch s.cfg.Store.Driver {
	case configs.DriverRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := redis.Open(ctx, s.cfg.Store.Redis.URL, redis.Options{KeyPrefix: s.cfg.Store.Redis.KeyPrefix,
			Retention: s.cfg.Store.Retention.D(), Shards: s.cfg.Store.Redis.Shards})
		if err != nil {
			return fmt.Errorf("open the redis store: %w", err)
		}
		s.store = st
	default:
		path := s.cfg.Store.BoltPath(s.dataDir)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create the data dir: %w", err)
		}
		st, err := s.openBolt(path)
		if err != nil {
			return fmt.Errorf("open the store: %w", err)
		}
		s.store = st
	}
	return nil
}

func holderID() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// shared reports whether replicas may share this store (Redis).
func (s *service) shared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Store.Driver == configs.DriverRedis
}

// workerLease names the liveness lease of a delivery worker.
func workerLease(holder string) string { return "worker:" + holder }

// workerTTL is the lifetime of a replica's worker lease, renewed every
// quarter of it: 8/15 of the scheduling lease (8 s for the default 15 s,
// renewed every 3.75 s). It is shorter than the scheduling lease by more
// than one renewal period of either, so when an owner dies its worker
// lease has always expired by the time its scheduling shards do: the
// replica that takes over sees the dead worker's in-flight attempts as
// interrupted and settles them unknown (I3) instead of waiting on them
// forever. The rest absorbs a late renewal; both expiries are written by
// the dead replica's clock and read by the new owner's, so clock skew
// between hosts cancels out.
func (s *service) workerTTL() time.Duration { return s.leaseTTL() * 8 / 15 }

// leaseTTL is the scheduling lease's lifetime: store.redis.lease_ttl on
// Redis, the scheduler's default on the embedded store.
func (s *service) leaseTTL() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.Store.Driver == configs.DriverRedis && s.cfg.Store.Redis.LeaseTTL > 0 {
		return time.Duration(s.cfg.Store.Redis.LeaseTTL)
	}
	return configs.DefaultLeaseTTL
}

// keepAlive holds this replica's worker lease so other replicas can tell
// its in-flight attempts from a dead one's (I3), and publishes whether
// this replica owns scheduling (herald_scheduler_owner).
func (s *service) keepAlive(ctx context.Context) error {
	for {
		if _, err := s.store.Leases().Acquire(ctx, workerLease(s.holder), s.holder, s.workerTTL()); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("cannot renew the worker lease")
		}
		s.publishOwner()
		select {
		case <-ctx.Done():
			s.ownerG.Set(0)
			return nil
		case <-time.After(s.workerTTL() / 4):
		}
	}
}

// publishOwner sets herald_scheduler_owner from the manager's shards.
func (s *service) publishOwner() {
	if owner, _ := s.engine.Scheduler.Owner(); owner {
		s.ownerG.Set(1)
	} else {
		s.ownerG.Set(0)
	}
}

// alive reports whether a delivery worker still runs: this process, or a
// replica whose worker lease has not expired.
func (s *service) alive(worker string) bool {
	if worker == s.holder {
		return true
	}
	if !s.shared() {
		return false // the data-dir lock makes this process the only one
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := s.store.Leases().Current(ctx, workerLease(worker))
	if err != nil {
		return !errors.Is(err, store.ErrNotFound) // unsure: keep it pending rather than mislabel
	}
	return l.Holder == worker && time.Now().Before(l.Expires)
}

func (s *service) routes() {
	srv := s.server
	srv.Handle("GET /healthz", func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/plain")
		_, err := io.WriteString(w, "ok\n")
		return err
	})
	srv.Handle("GET /readyz", s.readyz)
	srv.HandleHTTP("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	srv.Handle("/hooks/{name}", s.metrics.countRefused(s.hooks.ServeHTTP))
	inboxAPI := &webhook.InboxAPI{Tokens: webhook.InboxTokens{KV: s.store.Channels()}, Inbox: s.store.Inbox()}
	srv.Handle("/api/v1/inbox", inboxAPI.ServeHTTP)
	webhook.MountInboxPage(srv) // GET /inbox: the browser page over the API above
	s.mountConsole()            // GET /console: the admins' page (console.go)
	webhook.MountIndex(srv)     // GET /: links to the two pages
}

// readyz reports whether this replica can take traffic: its store answers.
// Scheduling ownership is reported but does not decide readiness when
// replicas share Redis: while an owner's lease runs out after it died, the
// standbys still accept inbound events and deliver, and a load balancer
// must not take them all out of rotation for that window. A single
// process (bolt) is ready once it owns scheduling, which it takes at
// start.
func (s *service) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	detail := map[string]any{}
	ready := true
	storeOK := s.store.Ping(ctx) == nil
	if storeOK {
		detail["store"] = "ok"
	} else {
		detail["store"], ready = "unreachable", false
	}
	owner, epoch := s.engine.Scheduler.Owner()
	s.publishOwner()
	switch sh := s.engine.Scheduler.Shards(); {
	case sh.Shards > 1:
		detail["owner"] = shardOwners(sh)
	case owner:
		detail["owner"] = fmt.Sprintf("this replica (epoch %d)", epoch)
	case !storeOK:
		detail["owner"] = "unknown"
	default:
		if l, err := s.store.Leases().Current(ctx, scheduler.SchedulerLease); err == nil && time.Now().Before(l.Expires) {
			detail["owner"] = "another replica"
		} else {
			detail["owner"] = "none (takeover pending)"
			if !s.shared() {
				ready = false
			}
		}
	}
	detail["channels"] = s.channels.status()
	// Shedding is said, not counted against readiness: taking the replica
	// out of rotation because one client floods it would finish the job.
	if in := s.server.Inbound(); in.Shedding {
		detail["inbound"] = "shedding"
	} else {
		detail["inbound"] = "ok"
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	detail["ready"] = ready
	return writeJSONResponse(w, status, detail)
}
