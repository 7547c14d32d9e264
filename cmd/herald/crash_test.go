package main

// The crash test: the real `herald serve` on the embedded store, SIGKILLed
// again and again while a Standard Webhooks sender pushes signed events
// through /hooks/ci to a webhook recipient that answers 204, 503 or 429,
// hangs past herald's timeout, or resets the connection. Afterwards the
// ledger and the receiver's log must tell the same story: one claim per
// accepted event (I1), no push sent again after an attempt that may have
// arrived (I3), and every claim settled, none lost without a trace.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/webhook"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/store/bolt"
	"github.com/herald-bridge/herald/webhook/signature"
)

const (
	// crashSeed drives every random choice of the crash test: the
	// receiver's answers and the killer's timing.
	crashSeed = 0x9e3779b97f4a7c15
	// crashEvents is how many distinct inbound events the sender delivers.
	crashEvents = 1500
	// crashSenders is how many events are in flight at the sender at once.
	crashSenders = 16
	// crashPace spaces the events out so that acceptance spans the kills
	// and a quiet stretch after them (at least 15 s for all events); it
	// paces the load, it is not measured.
	crashPace = 10 * time.Millisecond
	// crashMinKills is the least number of SIGKILLs while events arrive.
	crashMinKills = 3
	// crashBound is the ceiling on any one phase (sending, settling). It
	// only stops a broken build from hanging the run.
	crashBound = 90 * time.Second
	// hangBound is how long a hanging answer waits for herald to give up
	// (its webhook timeout, which no config key changes) before the
	// receiver drops the connection itself.
	hangBound = 3 * webhook.DefaultTimeout
)

// crashAnswer is what the receiver did with one request.
type crashAnswer int

const (
	answerOK          crashAnswer = iota // 204
	answerUnavailable                    // 503
	answerRateLimited                    // 429 with Retry-After: 1
	answerHang                           // no answer until herald times out or dies
	answerReset                          // request read, then the connection reset
)

func (a crashAnswer) String() string {
	return [...]string{"204", "503", "429", "hang", "reset"}[a]
}

// flakyReceiver is a Standard Webhooks endpoint that answers each request
// as a seeded hash of (webhook-id, how many times it saw that id) says,
// and keeps per webhook-id the answers it gave, in order.
type flakyReceiver struct {
	srv *httptest.Server
	key []byte

	mu     sync.Mutex
	seen   map[string][]crashAnswer
	open   int // requests being handled right now
	badSig int
	badID  int // body "id" differs from the webhook-id header
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	t.Helper()
	key, err := signature.ParseSecret(recipientSecret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &flakyReceiver{key: key, seen: map[string][]crashAnswer{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.handle))
	t.Cleanup(rc.srv.Close)
	return rc
}

// crashAnswerFor picks the answer to the nth request (0-based) for id: mostly
// 204, some 503 and 429, a few hangs and resets.
func crashAnswerFor(id string, n int) crashAnswer {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", uint64(crashSeed), id, n)
	switch v := h.Sum64() % 100; {
	case v < 82:
		return answerOK
	case v < 88:
		return answerUnavailable
	case v < 94:
		return answerRateLimited
	case v < 97:
		return answerHang
	default:
		return answerReset
	}
}

func (rc *flakyReceiver) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	id := r.Header.Get("webhook-id")
	sigErr := signature.Verify([][]byte{rc.key}, id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, time.Now(), 5*time.Minute)
	var doc struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &doc)

	rc.mu.Lock()
	a := crashAnswerFor(id, len(rc.seen[id]))
	rc.seen[id] = append(rc.seen[id], a)
	rc.open++
	if sigErr != nil {
		rc.badSig++
	}
	if doc.ID != id {
		rc.badID++
	}
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.open--
		rc.mu.Unlock()
	}()

	switch a {
	case answerOK:
		w.WriteHeader(http.StatusNoContent)
	case answerUnavailable:
		w.WriteHeader(http.StatusServiceUnavailable)
	case answerRateLimited:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	case answerHang:
		select {
		case <-r.Context().Done(): // herald timed out, or died
		case <-time.After(hangBound):
		}
		crashReset(w) // returning would answer 200
	case answerReset:
		crashReset(w)
	}
}

// crashReset takes the connection from the server and closes it with a
// TCP reset, without an answer.
func crashReset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// snapshot returns a copy of the answers per webhook-id, and the count of
// requests still being handled.
func (rc *flakyReceiver) snapshot() (map[string][]crashAnswer, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string][]crashAnswer, len(rc.seen))
	for k, v := range rc.seen {
		out[k] = append([]crashAnswer(nil), v...)
	}
	return out, rc.open
}

// crashSender is a Standard Webhooks sender: it retries each event, same
// webhook-id with a fresh timestamp and signature, until herald answers
// 2xx; a refused connection or a 503 only means "later".
type crashSender struct {
	addr   string
	client *http.Client

	accepted   atomic.Int64 // events answered 2xx
	duplicates atomic.Int64 // of those, answered {"duplicate": true}
	retries    atomic.Int64 // posts that had to be repeated

	mu         sync.Mutex
	done       map[string]bool
	unexpected []string // answers a sender would not retry
}

func newCrashSender(addr string) *crashSender {
	return &crashSender{
		addr: addr,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: crashSenders,
		}},
		done: map[string]bool{},
	}
}

// send delivers one event; it returns when herald accepted it or stop closes.
func (s *crashSender) send(id string, stop <-chan struct{}) {
	body := []byte(fmt.Sprintf(`{"title":"build %s finished","url":"https://ci.example.com/b/%s"}`, id, id))
	for {
		req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/hooks/ci", bytes.NewReader(body))
		if err != nil {
			panic(err) // a constant URL
		}
		req.Header = signHook(hookSecret, id, time.Now(), body)
		resp, err := s.client.Do(req)
		if err == nil {
			var ans struct {
				Duplicate bool `json:"duplicate"`
			}
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			switch {
			case resp.StatusCode/100 == 2:
				_ = json.Unmarshal(raw, &ans)
				s.accepted.Add(1)
				if ans.Duplicate {
					s.duplicates.Add(1)
				}
				s.mu.Lock()
				s.done[id] = true
				s.mu.Unlock()
				return
			case resp.StatusCode != http.StatusServiceUnavailable:
				s.mu.Lock()
				s.unexpected = append(s.unexpected, fmt.Sprintf("%s: %d %s", id, resp.StatusCode, raw))
				s.mu.Unlock()
				return
			}
		}
		s.retries.Add(1)
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond): // a sender's back-off
		}
	}
}

func (s *crashSender) acceptedIDs() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.done))
	for k := range s.done {
		out[k] = true
	}
	return out
}

// crashConfig is a bolt-backed service with one Standard Webhooks hook
// routed to one webhook recipient, which drops repeats by webhook-id
// (idempotent: true) or does not.
func crashConfig(addr, receiverURL string, idempotent bool) string {
	return localService(addr) + fmt.Sprintf(`recipients:
  sink:
    webhook: {url: %q, secret: %q, idempotent: %t%s}
inbound:
  ci:
    format: standard
    secret: "${%s}"
    route: [sink]
`, receiverURL+"/herald", recipientSecret, idempotent, crashSchedule(idempotent), hookSecretEnv)
}

// crashSchedule is the idempotent recipient's retry schedule in the
// sweep: eight retries a second apart, so every failure is retried
// within the run (the default waits minutes, then hours).
func crashSchedule(idempotent bool) string {
	if !idempotent {
		return ""
	}
	return ", retry_schedule: [1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s]"
}

// readyOwner waits for /readyz to answer 200 and returns its "owner".
func readyOwner(t *testing.T, p *proc) string {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	var owner string
	eventually(t, "/readyz answers 200 after a restart", func() bool {
		resp, err := hc.Get(p.url("/readyz"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var detail map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&detail)
		owner, _ = detail["owner"].(string)
		return resp.StatusCode == http.StatusOK
	})
	return owner
}

// hookLedger is `herald ledger show hook:ci --json` while the service runs;
// it is not recorded in the test's CLI log (it is large and repeated).
func hookLedger(dataDir string) ([]effectView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, "ledger", "show", "hook:ci", "--json", "--limit", "100000", "--data-dir", dataDir)
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ledger show: %w: %s", err, stderr.String())
	}
	var fxs []effectView
	if err := json.Unmarshal(out, &fxs); err != nil {
		return nil, fmt.Errorf("ledger show: %w", err)
	}
	return fxs, nil
}

// crashViolations collects failures by kind and reports the first few of each.
type crashViolations struct {
	t     *testing.T
	count map[string]int
}

func (v *crashViolations) add(kind, format string, args ...any) {
	v.t.Helper()
	v.count[kind]++
	if v.count[kind] <= 5 {
		v.t.Errorf("%s: "+format, append([]any{kind}, args...)...)
	}
}

func (v *crashViolations) total(kind string) int { return v.count[kind] }

// TestI1_I3_SIGKILLDuringDeliveryNoDuplicateNoLoss SIGKILLs herald at
// seeded random moments while about 1,500 signed events arrive and are
// pushed to a receiver that often misbehaves, restarting it each time on
// the same data dir. It then checks the ledger (read from the bolt file
// after a clean stop) against what the receiver saw:
//
//   - I1: every accepted event has exactly one effect; no request reached
//     the receiver without a claim.
//   - I3: herald sends a webhook push again only after an attempt the
//     ledger settled as retry_after, and the webhook sink reports
//     retry_after for a 429 answer or a connection that never opened —
//     never for a 2xx, a 503 (any 5xx and 408 read as unknown: the
//     receiver may have acted), a timeout or a reset after the request was
//     written. An attempt interrupted by the kill is settled unknown by
//     recovery and never sent again. So per webhook-id: every request the
//     receiver saw but the last was answered 429, every ledger attempt but
//     the last ended retry_after, the receiver saw no more requests than
//     the ledger records attempts, and 2xx was answered at most once.
//     Where the sink itself settled the effect unknown, its reason
//     (http_503, timeout, connection_lost) names the receiver's last answer.
//   - No loss: every effect ends completed or unknown (nothing here makes
//     one fail); a completed one was answered 2xx by the receiver on its
//     last request; an id the receiver answered 2xx is completed, or
//     unknown when the kill fell between the answer and its record.
//   - /readyz answers 200 after every restart.
//   - An effect is unknown only if its request may have left herald: an
//     attempt interrupted before its send is queued again and sent once.
//     The unknowns the receiver never saw are counted; each comes from the
//     instant between the durable sending record and the request's write.
func TestI1_I3_SIGKILLDuringDeliveryNoDuplicateNoLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test kills and restarts herald for about 40 s")
	}
	crashSweep(t, false, crashEvents)
}

// TestI3_IdempotentRecipientReplayedAfterCrash is the same sweep against a
// recipient marked idempotent: true, which drops repeats by webhook-id.
// Pushes a kill interrupted are sent again under the same webhook-id on
// recovery, and unknown outcomes are replayed, so no effect is left
// unknown: every accepted event ends completed, and its every request
// carried its one webhook-id (checked against the claim, I1).
func TestI3_IdempotentRecipientReplayedAfterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test kills and restarts herald for about 30 s")
	}
	crashSweep(t, true, crashEvents/2)
}

// crashSweep runs the kill sweep with events events against a recipient
// that is idempotent or not, and checks what the ledger and the receiver
// tell (see TestI1_I3_SIGKILLDuringDeliveryNoDuplicateNoLoss).
func crashSweep(t *testing.T, idempotent bool, events int) {
	rc := newFlakyReceiver(t)
	addr := freeAddr(t)
	cfgPath := writeConfig(t, crashConfig(addr, rc.srv.URL, idempotent))
	dataDir := filepath.Join(t.TempDir(), "data")
	env := []string{hookSecretEnv + "=" + hookSecret, "HERALD_LOG_LEVEL=warn"}
	p := startServeAt(t, cfgPath, dataDir, env...)
	owners := []string{readyOwner(t, p)}

	// The sender: a paced feed of event ids, crashSenders at a time.
	sender := newCrashSender(addr)
	stop := make(chan struct{})
	ids := make(chan string)
	var senders sync.WaitGroup
	sent := make(chan struct{})
	go func() {
		defer close(ids)
		tick := time.NewTicker(crashPace)
		defer tick.Stop()
		for i := range events {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			select {
			case ids <- fmt.Sprintf("evt-%04d", i):
			case <-stop:
				return
			}
		}
	}()
	for range crashSenders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for id := range ids {
				sender.send(id, stop)
			}
		}()
	}
	go func() { senders.Wait(); close(sent) }()
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-sent
	})

	// The killer: crashMinKills to crashMinKills+2 SIGKILLs at random
	// offsets while events arrive, each followed by a restart on the same
	// data dir and config. Then it holds off until a hung push has met
	// herald's own timeout (an unknown "timeout" in the ledger: that needs
	// a stretch without kills), and kills once more at a random offset
	// into the delivery tail, with 429s waiting to be retried.
	rng := rand.New(rand.NewPCG(crashSeed, 2))
	randIn := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	began := time.Now()
	kills, killsWhileSending := 0, 0
	kill := func(phase string) {
		t.Helper()
		_, open := rc.snapshot()
		accepted := sender.accepted.Load()
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		<-p.done
		kills++
		p = startServeAt(t, cfgPath, dataDir, env...)
		owner := readyOwner(t, p)
		owners = append(owners, owner)
		t.Logf("kill %d at %v (%s): %d events accepted, %d requests open at the receiver; restarted, /readyz 200, owner %q",
			kills, time.Since(began).Round(10*time.Millisecond), phase, accepted, open, owner)
	}
	sendDeadline := time.After(crashBound)
	for want := crashMinKills + rng.IntN(3); kills < want; {
		select {
		case <-time.After(randIn(800*time.Millisecond, 2*time.Second)):
		case <-sendDeadline:
			t.Fatalf("the sender did not finish within %v: %d of %d events accepted", crashBound, sender.accepted.Load(), events)
		}
		phase := "delivering"
		select {
		case <-sent:
		default:
			killsWhileSending++
			phase = "events arriving"
		}
		kill(phase)
	}
	select {
	case <-sent:
	case <-sendDeadline:
		t.Fatalf("the sender did not finish within %v: %d of %d events accepted", crashBound, sender.accepted.Load(), events)
	}
	waitFor(t, crashBound, "a hung push to time out", func() bool {
		if idempotent {
			return true // a timeout is replayed at once: nothing to wait for
		}
		fxs, _ := hookLedger(dataDir) // a failed read is read again
		for _, fx := range fxs {
			if fx.Error == webhook.ReasonTimeout {
				return true
			}
		}
		return false
	})
	time.Sleep(randIn(200*time.Millisecond, time.Second))
	kill("delivery tail")

	// Settle: recovery (once the restarted process holds the scheduling
	// lease the killed one left behind) turns interrupted attempts
	// unknown; 429s come back after a second; hangs end at herald's
	// timeout.
	var last []effectView
	settleStart := time.Now()
	for {
		fxs, err := hookLedger(dataDir)
		pending := -1
		if err == nil {
			last, pending = fxs, 0
			for _, fx := range fxs {
				if fx.State == "pending" {
					pending++
				}
			}
		}
		if pending == 0 && len(last) >= int(sender.accepted.Load()) {
			break
		}
		if time.Since(settleStart) > crashBound {
			t.Fatalf("after %v the ledger holds %d effects (%d accepted), %d pending; last error %v", crashBound, len(last), sender.accepted.Load(), pending, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	settled := time.Since(settleStart)
	owners = append(owners, readyOwner(t, p))
	if code := p.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("a clean stop after the run exited %d", code)
	}

	// The full record: every attempt, from the bolt file.
	st, err := bolt.Open(filepath.Join(dataDir, "herald.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	effects, err := st.Ledger().List(context.Background(), "hook:ci", 0)
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	seen, open := rc.snapshot()
	accepted := sender.acceptedIDs()
	sender.mu.Lock()
	unexpected := append([]string(nil), sender.unexpected...)
	sender.mu.Unlock()
	for _, u := range unexpected {
		t.Errorf("the sender got an answer it would not retry: %s", u)
	}
	if len(accepted) != events {
		t.Errorf("%d of %d events were accepted", len(accepted), events)
	}
	if open != 0 {
		t.Errorf("%d requests still open at the receiver after the ledger settled", open)
	}
	rc.mu.Lock()
	badSig, badID := rc.badSig, rc.badID
	rc.mu.Unlock()
	if badSig > 0 || badID > 0 {
		t.Errorf("receiver: %d requests with a bad signature, %d with a body id that is not the webhook-id", badSig, badID)
	}

	v := &crashViolations{t: t, count: map[string]int{}}

	// I1: exactly one effect per accepted event, none for anything else.
	byKey := map[string]store.Effect{}
	for _, fx := range effects {
		if _, dup := byKey[fx.Key]; dup {
			v.add("I1 duplicate claim", "effect %s is listed twice", fx.Key)
		}
		byKey[fx.Key] = fx
	}
	event := map[string]string{} // effect key → event id
	for id := range accepted {
		key := delivery.EffectKey("hook:ci", id, "sink")
		event[key] = id
		fx, ok := byKey[key]
		switch {
		case !ok:
			v.add("I1 accepted without a claim", "event %s was answered 2xx but has no effect", id)
		case fx.RunID != "hook:ci/"+id || fx.Recipient != "sink":
			v.add("I1 claim", "effect %s of event %s: run %q recipient %q", key, id, fx.RunID, fx.Recipient)
		}
	}
	for key := range byKey {
		if _, ok := event[key]; !ok {
			v.add("I1 claim without an accepted event", "effect %s", key)
		}
	}
	for key := range seen {
		if _, ok := byKey[key]; !ok {
			v.add("I1 push without a claim", "the receiver saw webhook-id %s, which the ledger never claimed", key)
		}
	}

	// I3 and no loss, per effect.
	states := map[store.EffectState]int{}
	unknownWhy := map[string]int{}
	var answered2xx, requests, resentAfterUnknown, twice2xx, neverArrived, acceptedTwice int
	answers := map[crashAnswer]int{}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		fx := byKey[key]
		got := seen[key]
		id := event[key]
		requests += len(got)
		oks := 0
		for i, a := range got {
			answers[a]++
			if a == answerOK {
				oks++
			}
			if i < len(got)-1 && a != answerRateLimited && !idempotent {
				resentAfterUnknown++
				v.add("I3 sent again", "event %s (%s): request %d was answered %s, yet the receiver saw it again: %v; ledger %s, attempts %s",
					id, key, i+1, a, got, fx.State, crashAttempts(fx))
			}
		}
		if oks > 0 {
			answered2xx++
		}
		if oks > 1 {
			acceptedTwice++
		}
		if oks > 1 && !idempotent { // an idempotent receiver drops the repeat
			twice2xx++
			v.add("I3 duplicate delivery", "event %s (%s) was answered 2xx %d times: %v", id, key, oks, got)
		}
		n := len(fx.Attempts)
		for i, at := range fx.Attempts[:max(n-1, 0)] {
			if at.Outcome != store.Pending || at.End.IsZero() {
				v.add("I3 attempt after an unknown", "event %s (%s): attempt %d ended %s %q and was followed by another: %s",
					id, key, i+1, at.Outcome, at.Error, crashAttempts(fx))
			}
		}
		if len(got) > n {
			v.add("I1 request without an attempt", "event %s (%s): the receiver saw %d requests, the ledger records %d attempts: %s",
				id, key, len(got), n, crashAttempts(fx))
		}
		states[fx.State]++
		var lastAns crashAnswer = -1
		if len(got) > 0 {
			lastAns = got[len(got)-1]
		}
		switch fx.State {
		case store.Completed:
			if lastAns != answerOK {
				v.add("loss: completed without a 2xx", "event %s (%s) is completed; the receiver's answers: %v", id, key, got)
			}
		case store.Unknown:
			reason := fx.Error
			if idempotent {
				v.add("I3 idempotent left unknown", "event %s (%s) is unknown %q; the receiver's answers: %v; attempts %s", id, key, fx.Error, got, crashAttempts(fx))
			}
			if strings.HasPrefix(reason, "interrupted") {
				reason = "interrupted"
				if len(got) < n {
					neverArrived++
				}
			} else if want, ok := crashSinkReasons[reason]; !ok || lastAns != want {
				v.add("I3 outcome disagrees", "event %s (%s) is unknown %q, but the receiver's answers were %v", id, key, fx.Error, got)
			}
			unknownWhy[reason]++
		default:
			v.add("loss: not settled", "event %s (%s) ended %s %q; attempts %s", id, key, fx.State, fx.Error, crashAttempts(fx))
		}
		if oks > 0 && fx.State != store.Completed && !(fx.State == store.Unknown && strings.HasPrefix(fx.Error, "interrupted")) {
			v.add("loss: 2xx not recorded", "event %s (%s) was answered 2xx but the ledger says %s %q", id, key, fx.State, fx.Error)
		}
	}

	t.Logf("run: %d kills (%d while events arrived), settled %v after the last restart; /readyz owner after each start: %q",
		kills, killsWhileSending, settled.Round(100*time.Millisecond), owners)
	t.Logf("sender: %d events accepted (%d answered as duplicates after a kill ate the first answer), %d posts repeated",
		len(accepted), sender.duplicates.Load(), sender.retries.Load())
	t.Logf("receiver: %d requests for %d webhook-ids (204 %d, 503 %d, 429 %d, hang %d, reset %d); %d ids answered 2xx, %d of them twice; %d sent again after an unknown",
		requests, len(seen), answers[answerOK], answers[answerUnavailable], answers[answerRateLimited], answers[answerHang], answers[answerReset],
		answered2xx, twice2xx, resentAfterUnknown)
	t.Logf("ledger: %d effects: completed %d, failed %d, unknown %d (%s), of the unknown %d never reached the receiver",
		len(effects), states[store.Completed], states[store.Failed], states[store.Unknown], crashReasons(unknownWhy), neverArrived)
	// A receiver that drops repeats by webhook-id acts on each id once;
	// one that does not would act on these ids twice.
	t.Logf("ids answered 2xx more than once: %d (a receiver that drops repeats by webhook-id acts on each once; one that does not acts on these twice)",
		acceptedTwice)
	if kills < crashMinKills+1 || killsWhileSending < crashMinKills {
		t.Errorf("only %d kills (%d while events arrived); the run did not exercise crashes", kills, killsWhileSending)
	}
	if answers[answerHang] == 0 || answers[answerReset] == 0 || answers[answerRateLimited] == 0 || answers[answerUnavailable] == 0 {
		t.Errorf("the receiver did not exercise every answer: %v", answers)
	}
	if v.total("I3 sent again")+v.total("I3 duplicate delivery") > 0 {
		t.Errorf("I3 broken: %d ids sent again after an unknown outcome, %d answered 2xx more than once", resentAfterUnknown, twice2xx)
	}
	// A kill rarely lands between a claim and its send (a few per run): the
	// store conformance suite proves that path on its own.
	t.Logf("recovery: %d attempts interrupted before their send were queued again, %d interrupted sends replayed under the same webhook-id",
		countAttempts(effects, store.InterruptedUnsent), countAttempts(effects, store.InterruptedReplayed))
	if idempotent {
		if states[store.Unknown] > 0 {
			t.Errorf("%d effects left unknown for an idempotent recipient", states[store.Unknown])
		}
		if countAttempts(effects, store.InterruptedReplayed) == 0 {
			t.Errorf("no interrupted send was replayed; the run did not exercise that path")
		}
		return
	}
	for _, why := range []string{"interrupted", webhook.ReasonTimeout, webhook.ReasonConnLost, "http_503"} {
		if unknownWhy[why] == 0 {
			t.Errorf("no effect ended unknown %q; the run did not exercise that path (%s)", why, crashReasons(unknownWhy))
		}
	}
	// The instant between the sending record and the request's write is
	// all that is left: a kill lands there rarely.
	if neverArrived > kills {
		t.Errorf("%d unknown effects never reached the receiver in %d kills: more than the instant between record and write explains", neverArrived, kills)
	}
}

// countAttempts counts the attempts of effects that ended with reason.
func countAttempts(effects []store.Effect, reason string) int {
	n := 0
	for _, fx := range effects {
		for _, a := range fx.Attempts {
			if a.Error == reason {
				n++
			}
		}
	}
	return n
}

// crashSinkReasons maps the reason the webhook sink records for an unknown
// outcome to the receiver's answer that causes it.
var crashSinkReasons = map[string]crashAnswer{
	"http_503":             answerUnavailable,
	webhook.ReasonTimeout:  answerHang,
	webhook.ReasonConnLost: answerReset,
}

// crashAttempts renders an effect's attempts for a failure message.
func crashAttempts(fx store.Effect) string {
	var b strings.Builder
	for i, a := range fx.Attempts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d %s", a.N, a.Outcome)
		if a.Error != "" {
			fmt.Fprintf(&b, " %q", a.Error)
		}
	}
	return "[" + b.String() + "]"
}

// crashReasons renders a count per reason, sorted.
func crashReasons(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
