package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery/email/emailtest"
)

// The Telegram bot of the acceptance test and the forum topic it posts to.
const (
	accTGToken    = "7012345678:AAHk3vQ9xZ2pL8mN4rT6wY1bC5dF7gJ0sE9"
	accTGChat     = "-1009876543210"
	accTGThread   = "77"
	accSlackEnv   = "HERALD_TEST_SLACK_PATH"
	accSlackToken = "q7Xk2LmN9pR4sT8vW1yZ3bC5"
)

// accReq is one request a fake service read: its path, headers, body and
// parameters (JSON fields or form values, as strings or raw JSON; query
// parameters under "?name").
type accReq struct {
	Path   string
	Header http.Header
	Body   []byte
	Params map[string]string
}

// accFake is one service's endpoint on 127.0.0.1. record decides which
// requests are messages (the others are answered but not kept); answer
// is swapped by the test to make the service fail; with drop set the
// connection is closed after the request was read.
type accFake struct {
	*httptest.Server
	mu     sync.Mutex
	got    []accReq
	record func(r accReq) bool
	answer func(r accReq) (int, string)
	drop   bool
}

func newAccFake(t *testing.T, record func(accReq) bool, answer func(accReq) (int, string)) *accFake {
	f := &accFake{record: record, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := accReq{Path: r.URL.Path, Header: r.Header.Clone(), Params: map[string]string{}}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch ct {
		case "multipart/form-data":
			if r.ParseMultipartForm(1<<20) == nil {
				for k, v := range r.MultipartForm.Value {
					req.Params[k] = v[0]
				}
			}
		case "application/x-www-form-urlencoded":
			_ = r.ParseForm()
			for k, v := range r.PostForm {
				req.Params[k] = v[0]
			}
		default:
			req.Body, _ = io.ReadAll(r.Body)
			var m map[string]json.RawMessage
			if json.Unmarshal(req.Body, &m) == nil {
				for k, v := range m {
					var s string
					if json.Unmarshal(v, &s) == nil {
						req.Params[k] = s
					} else {
						req.Params[k] = string(v)
					}
				}
			}
		}
		for k, v := range r.URL.Query() {
			req.Params["?"+k] = v[0]
		}
		f.mu.Lock()
		keep := f.record(req)
		if keep {
			f.got = append(f.got, req)
		}
		answer, drop := f.answer, f.drop && keep
		f.mu.Unlock()
		if drop {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		status, body := answer(req)
		if status == 0 { // a long poll: hold it a while, then answer empty
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
			status = http.StatusOK
		}
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

// set swaps the answer and the drop switch.
func (f *accFake) set(answer func(accReq) (int, string), drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if answer != nil {
		f.answer = answer
	}
	f.drop = drop
}

func (f *accFake) msgs() []accReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func everyRequest(accReq) bool { return true }

// The services' answers on success.
func slackOK(r accReq) (int, string) {
	if r.Path != slackHookPath {
		return http.StatusNotFound, "no_service"
	}
	return http.StatusOK, "ok"
}

func discordOK(r accReq) (int, string) {
	if r.Path != discordHookPath {
		return http.StatusNotFound, `{"message": "Unknown Webhook", "code": 10015}`
	}
	return http.StatusOK, fmt.Sprintf(`{"id":"1190000000000000%03d","type":0,"channel_id":"1180000000000000009","content":%q}`, time.Now().Nanosecond()%1000, r.Params["content"])
}

func ntfyOK(r accReq) (int, string) {
	if r.Path != "/" || r.Params["topic"] != ntfyTopic {
		return http.StatusBadRequest, `{"code":40009,"http":400,"error":"invalid request: topic invalid"}`
	}
	if r.Header.Get("Authorization") != "Bearer "+ntfyToken {
		return http.StatusUnauthorized, `{"code":40101,"http":401,"error":"unauthorized"}`
	}
	return http.StatusOK, fmt.Sprintf(`{"id":"a1B2c3D4e5F6","time":%d,"event":"message","topic":%q}`, time.Now().Unix(), ntfyTopic)
}

func barkOK(r accReq) (int, string) {
	if r.Path != "/push" || r.Params["device_key"] != barkKey {
		return http.StatusBadRequest, `{"code":400,"message":"failed to get device token: failed to get [x] device token from database"}`
	}
	return http.StatusOK, fmt.Sprintf(`{"code":200,"message":"success","timestamp":%d}`, time.Now().Unix())
}

// accQQGroup is the QQ group the OneBot recipient posts to.
const accQQGroup = "734291856"

func oneBotOK(r accReq) (int, string) {
	switch {
	case r.Header.Get("Authorization") == "":
		return http.StatusUnauthorized, ""
	case r.Header.Get("Authorization") != "Bearer "+oneBotToken:
		return http.StatusForbidden, ""
	case r.Path != "/send_group_msg":
		return http.StatusOK, `{"status":"failed","retcode":1404,"data":null,"message":"API not found"}`
	}
	return http.StatusOK, fmt.Sprintf(`{"status":"ok","retcode":0,"data":{"message_id":%d}}`, time.Now().Nanosecond()%100000)
}

func pushPlusOK(r accReq) (int, string) {
	if r.Path != "/send" || r.Params["token"] != pushPlusToken {
		return http.StatusOK, `{"code":903,"msg":"invalid token","data":null}`
	}
	return http.StatusOK, `{"code":200,"msg":"ok","data":"c2VyaWFsLTE"}`
}

func serverChanOK(r accReq) (int, string) {
	if r.Path != "/"+serverChanKey+".send" {
		return http.StatusNotFound, `{"code":40001,"message":"bad pushtoken"}`
	}
	return http.StatusOK, `{"code":0,"message":"","data":{"pushid":"1","readkey":"x","error":"SUCCESS","errno":0}}`
}

// telegramAPI answers the Bot API calls a polling bot makes; it keeps
// only sendMessage calls.
func telegramAPI(t *testing.T) *accFake {
	prefix := "/bot" + accTGToken + "/"
	isSend := func(r accReq) bool { return strings.EqualFold(r.Path, prefix+"sendMessage") }
	return newAccFake(t, isSend, telegramOK)
}

// mailParts decodes a submitted message: its subject and the text of its
// plain and HTML parts.
func mailParts(t *testing.T, data []byte) (subject, plain, html string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatalf("the submitted message does not parse: %v", err)
	}
	subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Errorf("subject %q: %v", m.Header.Get("Subject"), err)
	}
	_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("content type %q: %v", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(part) // NextPart undoes quoted-printable
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "text/plain":
			plain = string(b)
		case "text/html":
			html = string(b)
		}
	}
	return subject, plain, html
}

// TestI1_I3_I10_OneFeedReachesEverySinkOnce is the acceptance of the new
// sinks against `herald serve`: one rss task notifies an e-mail
// recipient, a Slack and a Discord webhook, an ntfy topic, a Bark device,
// a Telegram forum topic, a QQ group through OneBot, and WeChat through
// PushPlus and ServerChan. The baseline pushes no item (only the
// documented "now watching" notice); a new item whose title holds Chinese
// text, &, <b> and a CQ code arrives once at each, escaped for that
// service and with its link; an unchanged run sends nothing. Then the
// services fail as I3 sorts them (a 5xx or a connection dropped after
// sending, an error code in an HTTP 200 that may follow a send: unknown;
// a bad key or token, an unknown webhook, a closed topic, another error
// code in an HTTP 200: failed); after a SIGKILL, a restart and a run nothing is sent twice and
// no unknown or failed push turns completed. send-test reports a failing
// service's class after one request, and sends exactly one message to
// each healthy one; no token, key, password, topic, webhook secret or
// address appears in the serve log, the CLI's output, the ledger or
// /metrics.
func TestI1_I3_I10_OneFeedReachesEverySinkOnce(t *testing.T) {
	start := time.Now()
	tg := telegramAPI(t)
	sl := newAccFake(t, everyRequest, slackOK)
	dc := newAccFake(t, everyRequest, discordOK)
	nt := newAccFake(t, everyRequest, ntfyOK)
	bk := newAccFake(t, everyRequest, barkOK)
	mta := emailtest.New(t, emailtest.WithPassword(smtpPassword))
	qq := newAccFake(t, everyRequest, oneBotOK)
	pp := newAccFake(t, everyRequest, pushPlusOK)
	sc := newAccFake(t, everyRequest, serverChanOK)
	feed := newFeed(t)
	discordToken := discordHookPath[strings.LastIndexByte(discordHookPath, '/')+1:]

	// Each sink's recipient name, and the fake that counts its messages.
	names := []string{"mail-team", "slack-ops", "discord-ops", "my-phone", "my-iphone", "course-topic", "qq-class", "wechat-pp", "wechat-sc"}
	count := map[string]func() int{
		"mail-team":    func() int { return len(mta.Messages()) },
		"slack-ops":    func() int { return len(sl.msgs()) },
		"discord-ops":  func() int { return len(dc.msgs()) },
		"my-phone":     func() int { return len(nt.msgs()) },
		"my-iphone":    func() int { return len(bk.msgs()) },
		"course-topic": func() int { return len(tg.msgs()) },
		"qq-class":     func() int { return len(qq.msgs()) },
		"wechat-pp":    func() int { return len(pp.msgs()) },
		"wechat-sc":    func() int { return len(sc.msgs()) },
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for _, n := range names {
			out[n] = count[n]()
		}
		return out
	}
	// allAt is n messages at every service.
	allAt := func(n int) map[string]int {
		out := map[string]int{}
		for _, name := range names {
			out[name] = n
		}
		return out
	}

	recipients := "recipients:\n" +
		"  mail-team:\n    email: {to: [\"" + mailAddress + "\"]}\n" +
		"  slack-ops:\n    slack: {url: \"" + sl.URL + strings.TrimSuffix(slackHookPath, accSlackToken) + "${" + accSlackEnv + "}\"}\n" +
		"  discord-ops:\n    discord: {url: \"" + dc.URL + strings.TrimSuffix(discordHookPath, discordToken) + "${" + discordTokenEnv + "}\"}\n" +
		"  my-phone:\n    ntfy: {url: \"" + nt.URL + "/" + ntfyTopic + "\", token: \"${" + ntfyTokenEnv + "}\"}\n" +
		"  my-iphone:\n    bark: {url: \"" + bk.URL + "/${" + barkKeyEnv + "}\"}\n" +
		"  course-topic:\n    address: \"telegram:chat:" + accTGChat + ":topic:" + accTGThread + "\"\n" +
		"  qq-class:\n    onebot: {url: \"" + qq.URL + "\", access_token: \"${" + oneBotTokenEnv + "}\", group_id: " + accQQGroup + "}\n" +
		"  wechat-pp:\n    pushplus: {token: \"" + pushPlusToken + "\", base_url: \"" + pp.URL + "\"}\n" +
		// The default quota, 5 a day, is all this test sends to ServerChan;
		// a higher one keeps the quota out of every outcome here.
		"  wechat-sc:\n    serverchan: {sendkey: \"" + serverChanKey + "\", base_url: \"" + sc.URL + "\", daily_limit: 50}\n"
	addr := freeAddr(t)
	cfg := adjustExample(t, addr, map[string]string{
		`api_url: ""`: `api_url: "` + tg.URL + `"`,
		"recipients:\n": fmt.Sprintf("smtp: {host: 127.0.0.1, port: %d, username: herald, password: \"${%s}\", from: \"Herald <herald@example.edu>\", tls: none}\n", mta.Port, smtpPasswordEnv) +
			recipients,
		"tasks: []": "tasks:\n  - id: news\n    name: Course news\n    source: {kind: rss, url: \"" + feed.url() + "\"}\n    schedule: every 30m\n    notify: [" + strings.Join(names, ", ") + "]\n",
	})
	env := append(slices.Clone(phoneEnv),
		"TELEGRAM_BOT_TOKEN="+accTGToken,
		accSlackEnv+"="+accSlackToken,
		discordTokenEnv+"="+discordToken,
		smtpPasswordEnv+"="+smtpPassword,
		oneBotTokenEnv+"="+oneBotToken)
	p, dataDir := startServe(t, cfg, env...)
	logs := []*syncBuffer{p.log}

	// ledger reads the task's pushes; states counts them per recipient and state.
	ledger := func() []effectRow {
		var fxs []effectRow
		cliJSON(t, dataDir, &fxs, "ledger", "show", "news")
		return fxs
	}
	states := func(what string, want map[string]int) {
		t.Helper()
		deadline := time.Now().Add(startBound)
		for {
			got := map[string]int{}
			for _, fx := range ledger() {
				got[fx.Recipient+" "+fx.State]++
			}
			if maps.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("gave up waiting: %s: the ledger holds %v, want %v", what, got, want)
			}
			time.Sleep(pollEvery)
		}
	}
	// each is want with every recipient in the given state n times.
	each := func(state string, n int) map[string]int {
		out := map[string]int{}
		for _, name := range names {
			out[name+" "+state] = n
		}
		return out
	}
	// check runs the task once and waits for the run to end. A run refused
	// because the scheduler's own check holds the task, or because a
	// restarted herald does not own scheduling yet, is tried again.
	check := func(wantOutcome string) runView {
		t.Helper()
		var r runView
		eventually(t, "a run of news ends "+wantOutcome, func() bool {
			out, errOut, _ := run(t, "tasks", "run", "news", "--json", "--data-dir", dataDir)
			if out == "" && strings.Contains(errOut, `"code":"unavailable"`) {
				return false
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("tasks run news --json: %v\n%s\n%s", err, out, errOut)
			}
			return r.Outcome != "rejected" && r.Outcome != "deferred"
		})
		if r.Outcome != wantOutcome {
			t.Fatalf("the run of news ended %s (%s %s), want %s", r.Outcome, r.Class, r.Error, wantOutcome)
		}
		return r
	}

	// Baseline: at most the "now watching" notice the docs promise to the
	// task's recipients (docs/scale.md), never an item.
	waitBaseline(t, dataDir, "news")
	states("the baseline settles", each("completed", 1))
	if got := counts(); !maps.Equal(got, allAt(1)) {
		t.Fatalf("after the baseline the services got %v, want the one notice each", got)
	}
	var baseline []string
	for _, f := range []*accFake{sl, dc, nt, bk, tg, qq, pp, sc} {
		for _, m := range f.msgs() {
			baseline = append(baseline, string(m.Body)+fmt.Sprint(m.Params))
		}
	}
	for _, m := range mta.Messages() {
		baseline = append(baseline, string(m.Data))
	}
	for _, b := range baseline {
		if strings.Contains(b, "/episode/") || strings.Contains(strings.ToLower(b), "sketching") {
			t.Fatalf("the baseline pushed an item: %s", b)
		}
	}

	// A new item: Chinese text, &, <b> and a CQ code in its title. The
	// feed escapes it twice, so its text is "<b>", not markup a reader strips.
	const (
		exam  = "\u671f\u672b\u8003\u8bd5" // the exam
		retry = "\u8865\u8003"             // the resit
		title = exam + " & <b>" + retry + "</b> [CQ:at,qq=all]"
		link  = "https://theomnishow.omnigroup.com/exam-1"
	)
	feed.addItem("exam-1", exam+" &amp; &amp;lt;b&amp;gt;"+retry+"&amp;lt;/b&amp;gt; [CQ:at,qq=all]")
	if r := check("ok"); r.New != 1 || r.Effects != len(names) {
		t.Fatalf("the run found %d new items and claimed %d pushes, want 1 and %d", r.New, r.Effects, len(names))
	}
	states("the item's pushes complete", each("completed", 2))
	for name, n := range counts() {
		if n != 2 {
			t.Fatalf("%s got %d messages, want the notice and the item: %v", name, n, counts())
		}
	}

	// Each service's rendering of the item.
	if text := sl.msgs()[1].Params["text"]; !strings.Contains(text, "<"+link+"|"+exam+" &amp; &lt;b&gt;"+retry+"&lt;/b&gt; [CQ:at,qq=all]>") {
		t.Errorf("slack text %q: want the title escaped (&amp; &lt; &gt;) and linked", text)
	}
	d := dc.msgs()[1]
	if text := d.Params["content"]; !strings.Contains(text, "["+exam+` & \<b\>`+retry+`\</b\> \[CQ:at,qq=all\]](`+link+")") {
		t.Errorf("discord content %q: want the title backslash-escaped and linked", text)
	}
	if d.Params["allowed_mentions"] != `{"parse":[]}` || d.Params["?wait"] != "true" {
		t.Errorf("discord: allowed_mentions %s, wait %q; want no mention parsed and the message back", d.Params["allowed_mentions"], d.Params["?wait"])
	}
	if n := nt.msgs()[1].Params; !strings.Contains(n["message"], title) || n["click"] != link {
		t.Errorf("ntfy message %q click %q: want the title as plain text, opening its link", n["message"], n["click"])
	}
	if b := bk.msgs()[1].Params; !strings.Contains(b["body"], title) || b["url"] != link {
		t.Errorf("bark body %q url %q: want the title as plain text, opening its link", b["body"], b["url"])
	}
	tm := tg.msgs()[1].Params
	if !strings.Contains(tm["text"], exam+" &amp; &lt;b&gt;"+retry+"&lt;/b&gt; [CQ:at,qq=all]") || !strings.Contains(tm["text"], link) ||
		!strings.EqualFold(tm["parse_mode"], "HTML") || tm["message_thread_id"] != accTGThread || tm["chat_id"] != accTGChat {
		t.Errorf("telegram sendMessage %v: want the title HTML-escaped, its link, in chat %s topic %s", tm, accTGChat, accTGThread)
	}
	q := qq.msgs()[1]
	var qb struct {
		GroupID json.Number `json:"group_id"`
		Message []struct {
			Type string `json:"type"`
			Data struct {
				Text string `json:"text"`
			} `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(q.Body, &qb); err != nil || q.Path != "/send_group_msg" || qb.GroupID.String() != accQQGroup ||
		len(qb.Message) != 1 || qb.Message[0].Type != "text" || !strings.Contains(qb.Message[0].Data.Text, title) || !strings.Contains(qb.Message[0].Data.Text, link) {
		t.Errorf("onebot %s %s: want send_group_msg to the group with one text segment holding the title as written and its link (%v)", q.Path, q.Body, err)
	}
	if ppc := pp.msgs()[1].Params["content"]; !strings.Contains(ppc, exam+" &amp; &lt;b&gt;"+retry+"&lt;/b&gt; [CQ:at,qq=all]") ||
		!strings.Contains(ppc, `<a href="`+link+`">`) || strings.Contains(ppc, "<b>"+retry) {
		t.Errorf("pushplus content %q: want the title HTML-escaped, never markup, and linked", ppc)
	}
	if desp := sc.msgs()[1].Params["desp"]; !strings.Contains(desp, exam+" &amp; &lt;b&gt;"+retry+`&lt;/b&gt; \[CQ:at,qq=all\]`) ||
		!strings.Contains(desp, "("+link+")") || strings.Contains(desp, "<b>") {
		t.Errorf("serverchan desp %q: want the title escaped for Markdown and linked", desp)
	}
	msg := mta.Messages()[1]
	subject, plain, html := mailParts(t, msg.Data)
	if len(msg.To) != 1 || msg.To[0] != mailAddress {
		t.Errorf("mail sent to %v", msg.To)
	}
	if !strings.Contains(plain, title) || !strings.Contains(plain, link) {
		t.Errorf("mail text part %q: want the title as written and its link", plain)
	}
	if !strings.Contains(html, exam+" &amp; &lt;b&gt;"+retry+"&lt;/b&gt; [CQ:at,qq=all]") || !strings.Contains(html, `href="`+link+`"`) || strings.Contains(html, "<b>"+retry) {
		t.Errorf("mail HTML part %q: want the title escaped, never markup, and linked", html)
	}
	if subject == "" || !strings.Contains(string(msg.Data), "Message-ID:") && !strings.Contains(string(msg.Data), "Message-Id:") {
		t.Errorf("mail subject %q, or no Message-ID in the message", subject)
	}

	// An unchanged run claims nothing, so nothing more is sent anywhere.
	if r := check("unchanged"); r.Effects != 0 {
		t.Fatalf("an unchanged run claimed %d pushes", r.Effects)
	}
	states("the ledger is as it was", each("completed", 2))
	if got := counts(); !maps.Equal(got, allAt(2)) {
		t.Fatalf("an unchanged run sent: %v", got)
	}

	// The services fail as I3 sorts them: Slack answers 500, ntfy and the
	// SMTP server drop the connection after reading the message (unknown:
	// it may have arrived); Discord no longer knows the webhook, Bark the
	// key, and the topic is closed (failed).
	// ends is how each push of the next item ends: its state and reason.
	ends := map[string][2]string{
		"slack-ops":    {"unknown", "rollup_error"},
		"my-phone":     {"unknown", "connection_lost"},
		"mail-team":    {"unknown", "smtp_lost_after_data"},
		"discord-ops":  {"failed", "unknown_webhook"},
		"my-iphone":    {"failed", "bad_key"},
		"course-topic": {"failed", "topic_closed"},
		// OneBot's handler failed, maybe mid-send (retcode 200 in an HTTP
		// 200); PushPlus refuses the token (code 903 in an HTTP 200);
		// ServerChan answers an undocumented code, which marks nothing.
		"qq-class":  {"unknown", "code_200"},
		"wechat-pp": {"failed", "bad_token"},
		"wechat-sc": {"failed", "code_40001"},
	}
	unreachable := []string{"discord-ops", "my-iphone", "course-topic", "wechat-pp"}
	qq.set(func(accReq) (int, string) {
		return http.StatusOK, `{"status":"failed","retcode":200,"data":null,"message":"handler exception"}`
	}, false)
	pp.set(func(accReq) (int, string) { return http.StatusOK, `{"code":903,"msg":"invalid token","data":null}` }, false)
	sc.set(func(accReq) (int, string) { return http.StatusOK, `{"code":40001,"message":"bad pushtoken"}` }, false)
	sl.set(func(accReq) (int, string) { return http.StatusInternalServerError, "rollup_error" }, false)
	nt.set(nil, true)
	mta.DropAfterData(true)
	dc.set(func(accReq) (int, string) {
		return http.StatusNotFound, `{"message": "Unknown Webhook", "code": 10015}`
	}, false)
	bk.set(func(accReq) (int, string) {
		return http.StatusBadRequest, `{"code":400,"message":"failed to get device token: failed to get [x] device token from database"}`
	}, false)
	tg.set(func(r accReq) (int, string) {
		if strings.HasSuffix(r.Path, "/sendMessage") {
			return http.StatusBadRequest, `{"ok":false,"error_code":400,"description":"Bad Request: TOPIC_CLOSED"}`
		}
		return telegramOK(r)
	}, false)
	feed.addItem("exam-2", "Resit room")
	if r := check("ok"); r.New != 1 || r.Effects != len(names) {
		t.Fatalf("the second run found %d new items and claimed %d pushes, want 1 and %d", r.New, r.Effects, len(names))
	}
	after := each("completed", 2)
	for n, end := range ends {
		after[n+" "+end[0]] = 1
	}
	// The refusals that mark their recipients unreachable tell the task's
	// owner (the admin, for a declared task) once each, in the inbox.
	after["inbox:console:admin completed"] = len(unreachable)
	states("the second item's pushes end unknown or failed", after)
	sent := counts()
	for name, n := range sent {
		if n != 3 {
			t.Errorf("%s got %d requests for the second item, want 1", name, n-2)
		}
	}
	for _, fx := range ledger() {
		if end := ends[fx.Recipient]; fx.State != "completed" && (fx.Attempts != 1 || fx.State != end[0] || fx.Error != end[1]) {
			t.Errorf("%s ended %s (%s) after %d attempts, want %s (%s) after 1", fx.Recipient, fx.State, fx.Error, fx.Attempts, end[0], end[1])
		}
	}

	// send-test to a failing service reports its class honestly, after
	// one request, and exits 1.
	for _, name := range names {
		want := ends[name][0]
		out, errOut, code := run(t, "send-test", name, "--json", "--data-dir", dataDir)
		var v sendTestView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("send-test %s: %v\n%s\n%s", name, err, out, errOut)
		}
		if code != 1 || v.Outcome != want || v.State != want || v.Reason != ends[name][1] || v.Attempts != 1 {
			t.Errorf("send-test %s to a failing service = exit %d, %+v; want %s (%s) after one attempt", name, code, v, want, ends[name][1])
		}
	}
	for name, n := range counts() {
		if n != sent[name]+1 {
			t.Errorf("send-test %s to a failing service: %d requests, want 1", name, n-sent[name])
		}
	}
	sent = counts()

	// Every service is healthy again; herald is killed and started again.
	sl.set(slackOK, false)
	nt.set(nil, false)
	mta.DropAfterData(false)
	dc.set(discordOK, false)
	bk.set(barkOK, false)
	tg.set(telegramOK, false)
	qq.set(oneBotOK, false)
	pp.set(pushPlusOK, false)
	sc.set(serverChanOK, false)
	if code := p.signal(syscall.SIGKILL); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("serve exited %d after SIGKILL", code)
	}
	p = startServeAt(t, p.cfgPath, dataDir, env...)
	logs = append(logs, p.log)
	if r := check("unchanged"); r.Effects != 0 {
		t.Fatalf("the run after the restart claimed %d pushes", r.Effects)
	}
	states("nothing changes after the restart", after)
	if got := counts(); !maps.Equal(got, sent) {
		t.Fatalf("after the restart the services got %v, want still %v", got, sent)
	}

	// send-test: exactly one message per sink.
	for _, name := range names {
		var v sendTestView
		cliJSON(t, dataDir, &v, "send-test", name)
		if v.State != "completed" || v.Outcome != "completed" || v.Recipient != name || v.Attempts != 1 {
			t.Errorf("send-test %s = %+v", name, v)
		}
	}
	for name, n := range counts() {
		if n != sent[name]+1 {
			t.Errorf("send-test %s: the service got %d messages, want 1", name, n-sent[name])
		}
	}
	states("send-test adds nothing to the task's ledger", after)

	// I10: no secret anywhere herald writes.
	resp, err := http.Get(p.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ledgerJSON := cli(t, dataDir, "ledger", "show", "news", "--json") + cli(t, dataDir, "ledger", "show", "test", "--json")
	places := map[string]string{"metrics": string(metrics), "ledger": ledgerJSON, "CLI output": outputsOf(t).String()}
	for i, l := range logs {
		places[fmt.Sprintf("serve log %d", i+1)] = l.String()
	}
	secrets := map[string]string{
		"telegram token": accTGToken, "telegram bot key": accTGToken[strings.IndexByte(accTGToken, ':')+1:],
		"slack webhook secret": accSlackToken, "slack webhook path": slackHookPath,
		"discord webhook token": discordToken,
		"ntfy topic":            ntfyTopic, "ntfy token": ntfyToken,
		"bark key": barkKey, "telegram chat": accTGChat,
		"onebot token": oneBotToken, "qq group": accQQGroup, "pushplus token": pushPlusToken, "serverchan key": serverChanKey,
		"smtp password": smtpPassword, "mail address": mailAddress,
	}
	for where, text := range places {
		for what, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the %s carries the %s", where, what)
			}
		}
	}
	t.Logf("acceptance ran in %v", time.Since(start).Round(time.Millisecond))
}

// telegramOK is the Bot API's answer when nothing fails.
func telegramOK(r accReq) (int, string) {
	prefix := "/bot" + accTGToken + "/"
	method, ok := strings.CutPrefix(r.Path, prefix)
	switch {
	case !ok:
		return http.StatusNotFound, `{"ok":false,"error_code":404,"description":"Not Found"}`
	case strings.EqualFold(method, "getMe"):
		return http.StatusOK, `{"ok":true,"result":{"id":7012345678,"is_bot":true,"first_name":"herald","username":"herald_test_bot"}}`
	case strings.EqualFold(method, "getUpdates"):
		return 0, `{"ok":true,"result":[]}`
	case strings.EqualFold(method, "sendMessage"):
		return http.StatusOK, fmt.Sprintf(`{"ok":true,"result":{"message_id":%d,"date":%d,"chat":{"id":%s,"type":"supergroup","is_forum":true},"message_thread_id":%s,"text":"x"}}`,
			100+time.Now().Nanosecond()%1000, time.Now().Unix(), r.Params["chat_id"], accTGThread)
	}
	return http.StatusOK, `{"ok":true,"result":true}`
}
