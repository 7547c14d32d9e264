package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/herald-bridge/herald/configs"
	"github.com/herald-bridge/herald/conversation/assistant"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/egress"
	"github.com/herald-bridge/herald/delivery/feishu"
	"github.com/herald-bridge/herald/delivery/inbox"
	"github.com/herald-bridge/herald/delivery/telegram"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/download"
	"github.com/herald-bridge/herald/tasks/engine"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
	hook "github.com/herald-bridge/herald/webhook"
)

// assemble builds every component from the config. Delivery gets its own
// clients: it never shares a lifecycle with the conversational side.
func (s *service) assemble(ctx context.Context) error {
	cfg := s.cfg
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.ownerG = prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_scheduler_owner", Help: "1 while this replica owns scheduling."})
	s.registry.MustRegister(s.ownerG)
	// The replica id is this process's lease holder name: no address (I10).
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_scheduler_shards_owned",
		Help: "Scheduling shards this replica owns.", ConstLabels: prometheus.Labels{"replica": s.holder}}, s.shardsOwned))
	if st, ok := s.store.(interface{ CommitStats() bolt.CommitStats }); ok {
		registerCommitStats(s.registry, st.CommitStats)
	}
	s.metrics = newServiceMetrics(s.registry)
	s.registry.MustRegister(&stateMetrics{s: s})
	// The shards are the backend's own: the counting wrapper below keeps
	// only the store's interface.
	shards, _ := s.store.(store.ShardLeases)
	s.store = countLedger(s.store, s.metrics)

	s.prefs = &chatprefs.Store{KV: s.store.Channels(), Zone: cfg.Location}
	if err := s.setRoutes(cfg); err != nil {
		return err
	}
	s.notices = &assistant.Notices{} // on with the assistant (newAssistant)
	tc, err := s.routing(cfg)
	if err != nil {
		return err
	}
	s.table = delivery.NewTable(tc)

	// Delivery first: the manager hands admissions straight to its free
	// workers. Its hooks reach the manager only once both exist.
	// A task's course files go to its directory through their own sink.
	files := download.NewSink(download.Options{Dir: filepath.Join(s.dataDir, "downloads"), Plans: download.PlannerFunc(s.downloadPlan)})
	// Among replicas, a task's files are written by the one that owns its
	// scheduling shard, into its own data dir; one process owns them all.
	var owns func(taskID string) bool
	if shards != nil {
		owns = func(taskID string) bool { return s.engine != nil && s.engine.Scheduler.Schedules(taskID) }
	}
	dispatch, err := delivery.NewDispatcher(delivery.Options{
		Ledger: s.store.Ledger(), Router: download.Router{Next: s.table, Sink: files}, Holds: delivery.PrefHolds{Prefs: s.prefs}, Worker: s.holder,
		Owns: owns, Log: s.log.With().Str("component", "delivery").Logger(), Metrics: delivery.NewMetrics(s.registry),
		Recipients: s.recipients(),
		Digests:    delivery.PrefDigests{Prefs: s.prefs}, Model: s.notices,
		Hooks: delivery.Hooks{
			Disabled: func(ctx context.Context, taskID, recipient string, st delivery.RecipientState) {
				if err := s.manager.RecipientDisabled(ctx, taskID, recipient, s.namedRecipient(recipient), st); err != nil {
					s.log.Warn().Err(err).Msg("cannot tell that a recipient was disabled")
				}
			},
			Unreachable: func(ctx context.Context, taskID, recipient, reason string) {
				_ = s.manager.MarkUnreachable(ctx, taskID, recipient, reason)
			},
			Migrated: func(ctx context.Context, taskID, from, to string) {
				_ = s.manager.MigrateRecipient(ctx, taskID, from, to)
			},
		},
	})
	if err != nil {
		return err
	}
	s.dispatch = dispatch
	s.prefs.Changed = func(ctx context.Context, address string) { _, _ = dispatch.Release(ctx, address) }
	s.engine, err = engine.New(engine.Options{
		Store: s.store, Sources: s.sourceOpener(), Policy: policyOf(cfg), Zone: cfg.Location,
		Log: s.log.With().Str("component", "tasks").Logger(), Holder: s.holder, LeaseTTL: s.leaseTTL(), Shards: shards,
		WakeDelivery: dispatch.Wake, Direct: dispatch, Alive: s.alive, Replay: dispatch.Replayable,
		Observe: s.metrics.run, StartSpread: time.Duration(cfg.Policy.Limits.StartSpread),
	})
	if err != nil {
		return err
	}
	s.manager = s.engine.Catalog
	if err := s.manager.SetDeclared(ctx, declared(cfg)); err != nil {
		s.log.Error().Err(err).Msg("some config tasks could not be applied")
	}

	s.hooks = hook.NewHooks(countingAdmitter{s.engine.Admitter, s.metrics}, nil)
	if err := s.hooks.Set(hooksOf(cfg)); err != nil {
		return err
	}
	proxies, err := hook.ParseProxies(cfg.Server.TrustedProxies)
	if err != nil {
		return fmt.Errorf("server.trusted_proxies: %w", err)
	}
	il := cfg.Server.InboundLimits
	s.server = hook.New(hook.Options{Addr: cfg.Server.Listen, CertFile: cfg.Server.TLS.CertFile, KeyFile: cfg.Server.TLS.KeyFile,
		MaxInFlight: il.MaxInFlight + configs.OtherRoutesInFlight, TrustedProxies: proxies,
		Inbound: hook.InboundLimits{PerClient: il.PerClient, MaxInFlight: il.MaxInFlight, BodyTimeout: il.BodyTimeout.D(), BodyBudget: int64(il.UnauthenticatedMiB) << 20},
		Log:     s.log.With().Str("component", "http").Logger()})
	registerInboundStats(s.registry, s.server.Inbound)
	s.routes()
	s.channels, err = newChannelSet(ctx, s)
	return err
}

// registerCommitStats exports the embedded store's group commit: rounds,
// the writes they carried (their ratio is the batch size) and the time
// spent in them.
func registerCommitStats(reg prometheus.Registerer, stats func() bolt.CommitStats) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "herald_store_commits_total",
			Help: "Write transactions of the embedded store (one fsync round each)."},
			func() float64 { return float64(stats().Transactions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "herald_store_commit_writes_total",
			Help: "Writes carried by those transactions."},
			func() float64 { return float64(stats().Writes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "herald_store_commit_seconds_total",
			Help: "Time spent in those transactions, fsync included."},
			func() float64 { return stats().Busy.Seconds() }),
	)
}

// reload applies a new, valid config: recipients, policy, hooks and
// declared tasks change; queued deliveries stay queued.
func (s *service) reload(ctx context.Context, cfg *configs.Config) error {
	oldRoutes := s.routeSet
	if err := s.setRoutes(cfg); err != nil {
		return err
	}
	tc, err := s.routing(cfg)
	if err != nil {
		s.mu.Lock()
		s.routeSet = oldRoutes
		s.mu.Unlock()
		return err
	}
	if err := s.hooks.Set(hooksOf(cfg)); err != nil {
		return err
	}
	s.table.Swap(tc)
	s.manager.SetPolicy(policyOf(cfg))
	s.channels.core.SetDefaults(cfg.Language, cfg.Location)
	s.channels.core.SetAssistant(newAssistant(cfg, s.route, s.log.With().Str("component", "assistant").Logger(), s.notices), cfg.Assistant.MaxPerHour)
	s.channels.core.SetChatRate(cfg.Policy.Limits.Chat.PerMinute, cfg.Policy.Limits.Chat.Burst)
	s.setHistoryBounds(cfg)
	s.mu.Lock()
	old := s.cfg
	s.cfg = cfg
	s.mu.Unlock()
	for _, key := range configs.RestartOnly(old, cfg) {
		msg := "changed in the config; it takes effect at the next start"
		if strings.HasPrefix(key, "channels.") {
			msg = "changed in the config; pushes through the channel use it now, the chat side at the next start"
		}
		s.log.Warn().Str("setting", key).Msg(msg)
	}
	return s.manager.SetDeclared(ctx, declared(cfg))
}

// routing is the one builder that turns config into sinks: the literal
// address transports from the transports table, each named recipient from
// its sink section (configs.Recipient.Sink) or its address. Adding a sink
// needs nothing here.
func (s *service) routing(cfg *configs.Config) (delivery.TableConfig, error) {
	log := s.log.With().Str("component", "delivery").Logger()
	tc := delivery.TableConfig{
		Sinks:    map[delivery.AddressKind]delivery.Sink{},
		Named:    map[string]delivery.Route{},
		Lang:     cfg.Language,
		Zone:     cfg.Location,
		Langs:    s.prefs.Lang,
		Disabled: map[delivery.AddressKind]string{},
	}
	var errs []error
	for _, t := range transports {
		sink, off, err := t.build(s, cfg, log)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s delivery: %w", t.kind, err))
		case off != "":
			tc.Disabled[t.kind] = off
		default:
			tc.Sinks[t.kind] = sink
		}
	}
	deps := delivery.SinkDeps{Store: s.store, Log: log, Sections: cfg.SinkSections()}
	for name, r := range cfg.Recipients {
		route := delivery.Route{Lang: r.Language, Format: r.Format, Template: r.Template}
		if r.Timezone != "" {
			if z, err := time.LoadLocation(r.Timezone); err == nil {
				route.Zone = z
			}
		}
		route.Translate = r.Translate
		if r.Digest != "" {
			if sc, err := schedule.Parse(r.Digest, cfg.Location); err == nil { // validated by Load
				route.Digest = delivery.DigestPlan{Schedule: sc, MaxItems: r.DigestMaxItems}
			}
		}
		if sc := r.Sink(); sc != nil {
			deps.Name = name
			deps.Egress = egress.Options{AllowPrivate: cfg.Policy.AllowPrivateNetworks, Route: s.sinkRoute(sc)}
			sink, err := delivery.BuildSink(sc, deps)
			if err != nil {
				errs = append(errs, fmt.Errorf("recipient %s: %w", name, err))
				continue
			}
			route.Sink, route.To = sink, delivery.Address{Kind: sc.Kind(), Name: name}
		} else {
			a, err := delivery.ParseAddress(r.Address)
			if err != nil {
				errs = append(errs, fmt.Errorf("recipient %s: %w", name, err))
				continue
			}
			sink := tc.Sinks[a.Kind]
			if sink == nil {
				s.log.Warn().Str("recipient", name).Str("why", tc.Disabled[a.Kind]).Msg("recipient's transport is off; its pushes wait")
				sink = offSink{why: tc.Disabled[a.Kind]}
			}
			a.Name = name
			route.Sink, route.To = sink, a
		}
		tc.Named[name] = route
	}
	return tc, errors.Join(errs...)
}

// transports are the sinks for literal addresses (telegram:chat:…,
// feishu:…, inbox:…). Each builds its sink, or says why it is off.
var transports = []struct {
	kind  delivery.AddressKind
	build func(s *service, cfg *configs.Config, log zerolog.Logger) (sink delivery.Sink, off string, err error)
}{
	{delivery.InboxAddr, func(s *service, cfg *configs.Config, _ zerolog.Logger) (delivery.Sink, string, error) {
		return inbox.New(s.store.Inbox(), inbox.WithLimit(cfg.Policy.Limits.InboxItems), inbox.WithDropped(s.metrics.inboxDrop)), "", nil
	}},
	{delivery.TelegramChat, func(s *service, cfg *configs.Config, log zerolog.Logger) (delivery.Sink, string, error) {
		t := cfg.Channels.Telegram
		if t.Token == "" {
			return nil, "channels.telegram.token is not set", nil
		}
		hc := egress.Client(platformOptions(s.route(t.Proxy), telegram.DefaultTimeout))
		sink, err := telegram.New(t.Token, t.APIURL, telegram.WithLogger(log), telegram.WithHTTPClient(hc))
		if err != nil {
			return nil, "", err
		}
		return sink, "", nil
	}},
	{delivery.FeishuChat, func(s *service, cfg *configs.Config, log zerolog.Logger) (delivery.Sink, string, error) {
		f := cfg.Channels.Feishu
		if f.AppID == "" || f.AppSecret == "" {
			return nil, "channels.feishu app_id/app_secret are not set", nil
		}
		hc := egress.Client(platformOptions(s.route(f.Proxy), feishu.DefaultTimeout))
		sink, err := feishu.New(f.AppID, f.AppSecret, f.BaseURL, feishu.WithLogger(log), feishu.WithTokenSource(s.feishuTokens(f)), feishu.WithHTTPClient(hc))
		if err != nil {
			return nil, "", err
		}
		return sink, "", nil
	}},
}

// feishuApp is the Feishu app's one tenant token source and the settings
// it was built for.
type feishuApp struct {
	appID, appSecret, baseURL, route string
	tokens                           *feishu.TokenSource
}

// feishuTokens returns the tenant token source of the configured Feishu
// app. The delivery sink and the chat channel both call the platform as
// that app, so they share one token and one refresh schedule instead of
// fetching a token each. The source is built once and survives reloads
// (which rebuild the sink) while the app's id, secret and base URL stay
// the same. It fetches with an HTTP client of its own, so neither side's
// lifecycle affects its refresh.
func (s *service) feishuTokens(f configs.Feishu) *feishu.TokenSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.routeSet.Get(f.Proxy)
	if err != nil {
		r, _ = s.routeSet.Get("")
	}
	if a := s.feishu; a != nil && a.appID == f.AppID && a.appSecret == f.AppSecret && a.baseURL == f.BaseURL && a.route == r.Key() {
		return a.tokens
	}
	hc := egress.Client(platformOptions(r, feishu.DefaultTimeout))
	s.feishu = &feishuApp{appID: f.AppID, appSecret: f.AppSecret, baseURL: f.BaseURL, route: r.Key(),
		tokens: feishu.NewTokenSource(f.AppID, f.AppSecret, f.BaseURL, hc, nil)}
	return s.feishu.tokens
}

// sinkRoute is the route a recipient's sink section names.
func (s *service) sinkRoute(sc delivery.SinkConfig) *egress.Route {
	if pn, ok := sc.(interface{ ProxyName() string }); ok {
		return s.route(pn.ProxyName())
	}
	return s.route("")
}

// offSink holds pushes for a transport that is switched off: they wait
// (retry_after) rather than fail, so turning the channel on delivers them.
type offSink struct{ why string }

func (o offSink) Send(context.Context, delivery.Delivery) delivery.Outcome {
	return delivery.Outcome{Result: delivery.RetryAfter, After: 5 * time.Minute, Reason: "transport_off"}
}

func policyOf(cfg *configs.Config) tasks.Policy {
	p := tasks.Policy{
		Admins: cfg.Policy.Admins, Requesters: cfg.Policy.Requesters, AllowedHosts: cfg.Policy.AllowedHosts,
		AllowPrivate: cfg.Policy.AllowPrivateNetworks, Named: map[string]bool{},
		DownloadRoots: cfg.Policy.DownloadRoots, DownloadHosts: cfg.Policy.DownloadHosts,
		Limits: limitsOf(cfg.Policy.Limits),
	}
	for _, r := range cfg.Policy.AutoApprove {
		p.AutoApprove = append(p.AutoApprove, tasks.AutoApprove{Principals: r.Principals, Hosts: r.Hosts})
	}
	for name := range cfg.Recipients {
		p.Named[name] = true
	}
	p.RSSHub = rsshubBases(cfg)
	return p
}

func limitsOf(l configs.Limits) tasks.Limits {
	return tasks.Limits{MaxTasks: l.MaxTasks, MaxTasksPerOwner: l.MaxTasksPerOwner, HistoryRuns: l.HistoryRuns,
		MaxItemsPerRun: l.MaxItemsPerRun, Concurrency: l.ConcurrentRuns,
		PerHostRuns: l.PerHost.Concurrency, PerHostPerMinute: l.PerHost.PerMinute}
}

func declared(cfg *configs.Config) []tasks.Declared {
	owner := "console:admin"
	if len(cfg.Policy.Admins) > 0 {
		owner = cfg.Policy.Admins[0]
	}
	out := make([]tasks.Declared, 0, len(cfg.Tasks))
	for _, t := range cfg.Tasks {
		d := tasks.Declared{ID: t.ID, Name: t.Name, Source: withRouteURL(cfg, t.Source), Schedule: t.Schedule, Notify: t.Notify,
			Include: t.Include, Exclude: t.Exclude, Owner: t.Owner}
		d.NotifyRemoved, d.Template = t.NotifyRemoved, t.Template
		if d.Owner == "" {
			d.Owner = owner
		}
		for _, b := range t.RemindBefore {
			d.RemindBefore = append(d.RemindBefore, b.D())
		}
		out = append(out, d)
	}
	return out
}

func hooksOf(cfg *configs.Config) []hook.Hook {
	out := make([]hook.Hook, 0, len(cfg.Inbound))
	for name, h := range cfg.Inbound {
		out = append(out, hook.Hook{Name: name, Format: h.Format, Secrets: h.AllSecrets(), Route: h.Route, Template: h.Template})
	}
	return out
}

// sourceOpener builds each run's source under the policy in force at that
// moment, so a reload that changes allow_private_networks applies to the
// next check; redirects stay within the task's approved scope (I8).
type sourceOpener struct{ s *service }

var _ tasks.ScopedOpener = sourceOpener{}

func (s *service) sourceOpener() tasks.SourceOpener { return sourceOpener{s} }

// options are the source options in force now; a course site's token
// or a cookie given in chat is asked of the credential store at each
// run, and a form login keeps its session there.
func (o sourceOpener) options(spec watch.Spec, zone *time.Location) source.Options {
	kv := o.s.store.Channels()
	opts := source.Options{AllowPrivate: o.s.manager.Policy().AllowPrivate, DefaultZone: zone, Route: o.s.route(spec.Proxy),
		Token: tokenResolver(kv, spec), Observe: o.s.metrics.fetch,
		Session: sessionOf(kv, spec), Cookie: cookieResolver(kv, spec), HostAllowed: o.s.manager.Policy().HostAllowed}
	if spec.Kind == source.KindRSSHub {
		cfg := o.s.currentConfig()
		opts.Instances, opts.Trusted = rsshubInstances(cfg), rsshubTrusted(cfg)
	}
	if o.s.browser != nil {
		// A nil *Pool in the interface would not read as "no browser".
		opts.Browser = o.s.browser
	}
	return opts
}

// Open builds a source with redirects confined to the same host.
func (o sourceOpener) Open(spec watch.Spec, zone *time.Location) (tasks.Source, error) {
	return source.New(spec, o.options(spec, zone))
}

// OpenScoped builds a source whose redirects must stay on the grant's host
// and under its path prefix.
func (o sourceOpener) OpenScoped(spec watch.Spec, zone *time.Location, sc tasks.Scope) (tasks.Source, error) {
	opts := o.options(spec, zone)
	opts.Scope = source.Within(sc.Host, sc.PathPrefix)
	return source.New(spec, opts)
}

func writeJSONResponse(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// The dispatcher takes admissions directly from admission.
var _ delivery.Direct = (*delivery.Dispatcher)(nil)
