package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/mattn/go-isatty"
	"golang.org/x/text/width"

	"github.com/herald-bridge/herald/tasks"
)

// call runs an admin API operation. With --json it prints the result
// itself; done says the command has nothing left to do but exit with code.
func call[T any](e *env, op string, in any, timeout time.Duration) (out T, code int, done bool) {
	if code := e.do(op, in, &out, timeout); code != exitOK {
		return out, code, true
	}
	if e.json {
		e.printJSON(out)
		return out, exitOK, true
	}
	return out, exitOK, false
}

// callTable calls op for a list and prints it as JSON (--json) or as a
// table under head, one row per element.
func callTable[T any](e *env, op string, in any, timeout time.Duration, head string, row func(T) []string) int {
	list, code, done := call[[]T](e, op, in, timeout)
	if done {
		return code
	}
	rows := make([][]string, 0, len(list))
	for _, v := range list {
		rows = append(rows, row(v))
	}
	table(e.stdout, head, rows)
	return exitOK
}

func (e *env) printJSON(v any) {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// table writes head (tab-separated) and rows as aligned columns, two
// spaces apart. Columns are measured in terminal cells, so a Chinese or
// Japanese name, two cells a character, keeps the columns after it
// aligned (text/tabwriter counts characters).
func table(w io.Writer, head string, rows [][]string) {
	lines := append([][]string{strings.Split(head, "\t")}, rows...)
	var widths []int
	for _, l := range lines {
		for i, c := range l {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.Reset()
		for i, c := range l {
			b.WriteString(c)
			if i < len(l)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

// displayWidth is how many terminal cells s takes: two for a wide or
// full-width character (CJK), none for a combining mark, else one.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == '\u200b':
		case width.LookupRune(r).Kind() == width.EastAsianWide || width.LookupRune(r).Kind() == width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04 MST")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cmdStatus(e *env, args []string) int {
	if _, code, ok := e.parse(args); !ok {
		return code
	}
	st, code, done := call[statusView](e, "status", struct{}{}, 10*time.Second)
	if done {
		return code
	}
	owner := "no (standby)"
	switch {
	case st.Owner && st.Shards != nil && st.Shards.Shards > 1:
		owner = fmt.Sprintf("yes (%d of %d shards)", len(st.Shards.Mine), st.Shards.Shards)
	case st.Owner:
		owner = fmt.Sprintf("yes (epoch %d)", st.Epoch)
	}
	fmt.Fprintf(e.stdout, "herald %s listening on %s\nreplica:  %s\nowner:    %s\nstore:    %s (ok: %v)\ntasks:    %d\n", st.Version, st.Listen, st.Holder, owner, st.Store, st.StoreOK, st.Tasks)
	if sh := st.Shards; sh != nil && sh.Shards > 1 {
		fmt.Fprintf(e.stdout, "shards:   %s\n", shardLine(sh))
	}
	if c := st.Conditional; c != nil {
		fmt.Fprintf(e.stdout, "sources:  %s read, %d answered 304 Not Modified (%.0f%%)\n",
			plural(int(c.Documents), "document", "documents"), c.NotModified, 100*c.Share)
	}
	names := make([]string, 0, len(st.Channels))
	for name := range st.Channels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(e.stdout, "channel:  %s %s\n", name, st.Channels[name])
	}
	return exitOK
}

func cmdTasks(e *env, args []string) int {
	noWait := e.flags.Bool("no-wait", false, "with run: start the check and return at once")
	limit := e.flags.Int("limit", tasks.MaxPage, "with list: at most this many tasks (one page, in id order)")
	after := e.flags.String("after", "", "with list: the tasks after this id (the next page)")
	pos, code, ok := e.parse(args)
	if !ok {
		return code
	}
	subs := []string{"list", "show", "pause", "resume", "delete", "run", "rebaseline"}
	if len(pos) == 0 {
		return e.usage("missing subcommand; the subcommands are " + strings.Join(subs, ", "))
	}
	sub := pos[0]
	if code, ok := e.subcommand(sub, subs...); !ok {
		return code
	}
	if sub == "list" {
		list, code, done := call[[]taskView](e, "tasks.list", pageIn{Limit: *limit, After: *after}, 10*time.Second)
		if done {
			return code
		}
		rows := make([][]string, 0, len(list))
		for _, t := range list {
			rows = append(rows, []string{t.ID, dash(t.Name), t.State, t.Owner, t.Where.String(), t.Schedule, when(t.NextRun), dash(t.LastOutcome)})
		}
		table(e.stdout, "ID\tNAME\tSTATE\tOWNER\tSOURCE\tSCHEDULE\tNEXT RUN\tLAST", rows)
		if n := len(list); n > 0 && n >= min(*limit, tasks.MaxPage) {
			fmt.Fprintf(e.stderr, "more may follow: herald tasks list --after %s\n", list[n-1].ID)
		}
		return exitOK
	}
	if len(pos) != 2 {
		return e.usage(fmt.Sprintf("%s needs exactly one task id", sub))
	}
	id := pos[1]
	switch sub {
	case "show":
		d, code, done := call[taskDetail](e, "tasks.show", map[string]string{"id": id}, 10*time.Second)
		if done {
			return code
		}
		fmt.Fprintf(e.stdout, "%s  %s\nstate:     %s\nowner:     %s\nsource:    %s %s\nschedule:  %s\nnotify:    %s\nrequest:   %s by %s at %s\n",
			d.ID, dash(d.Name), d.State, d.Owner, dash(d.Kind), d.Source, d.Schedule, strings.Join(d.Notify, ", "),
			d.Request.ID, d.Request.By, d.Request.At.Local().Format("2006-01-02 15:04 MST"))
		if d.Decision != nil {
			verb := "rejected"
			if d.Decision.Approved {
				verb = "approved"
			}
			fmt.Fprintf(e.stdout, "decision:  %s by %s at %s\n", verb, d.Decision.By, d.Decision.At.Local().Format("2006-01-02 15:04 MST"))
		}
		if d.Grant != nil {
			fmt.Fprintf(e.stdout, "scope:     %s%s* → %s (%s)\n", d.Grant.Host, d.Grant.PathPrefix, strings.Join(d.Grant.Recipients, ", "), d.Grant.Basis)
		}
		if d.Next != nil {
			fmt.Fprintf(e.stdout, "next:      %s (%s)\n", when(&d.Next.At), nextWhy(d.Next))
		}
		if d.LastReason != "" {
			fmt.Fprintf(e.stdout, "last error: %s (%s in a row)\n", d.LastReason, plural(d.Failures, "failure", "failures"))
		}
		if len(d.Unreachable) > 0 {
			fmt.Fprintf(e.stdout, "unreachable recipients: %s\n", strings.Join(d.Unreachable, ", "))
		}
		rows := [][]string{}
		for _, r := range d.Runs {
			rows = append(rows, []string{r.Start.Local().Format("01-02 15:04:05 MST"), r.Outcome, fmt.Sprint(r.Items), fmt.Sprintf("%d/%d/%d", r.New, r.Changed, r.Removed), fmt.Sprint(r.Effects), r.Duration.Round(time.Millisecond).String(), dash(runNote(r))})
		}
		if len(rows) > 0 {
			fmt.Fprintln(e.stdout)
			table(e.stdout, "STARTED\tOUTCOME\tITEMS\tNEW/CHG/DEL\tPUSHES\tTOOK\tNOTE", rows)
		}
		if n := len(d.Runs); n > 0 && len(d.Runs[0].Blocked) > 0 {
			// What a rendered page tried to reach and the guard or scope refused.
			fmt.Fprintf(e.stdout, "\nblocked in the run of %s:\n", d.Runs[0].Start.Local().Format("01-02 15:04:05"))
			for _, b := range d.Runs[0].Blocked {
				fmt.Fprintf(e.stdout, "  %s\n", b)
			}
		}
		return exitOK
	case "pause", "resume", "delete", "rebaseline":
		return e.taskState(sub, id)
	case "run":
		if isatty.IsTerminal(os.Stderr.Fd()) && !*noWait && !e.json {
			fmt.Fprintf(e.stderr, "checking %s…\n", id)
		}
		var r runView
		if code := e.do("tasks.run", map[string]any{"id": id, "no_wait": *noWait}, &r, 5*time.Minute); code != exitOK {
			return code
		}
		if e.json {
			e.printJSON(r)
			if r.Outcome == "failed" {
				return exitFailure
			}
			return exitOK
		}
		if *noWait {
			fmt.Fprintf(e.stdout, "check of %s started\n", id)
			return exitOK
		}
		items := "items"
		if r.Items == 1 {
			items = "item"
		}
		fmt.Fprintf(e.stdout, "%s: %s — %d %s, %d new, %d changed, %d removed, %d pushes queued (%s)\n", id, r.Outcome, r.Items, items, r.New, r.Changed, r.Removed, r.Effects, r.Duration.Round(time.Millisecond))
		if r.Reason != "" {
			fmt.Fprintf(e.stdout, "note: %s\n", r.Reason)
		}
		for _, b := range r.Blocked {
			fmt.Fprintf(e.stdout, "blocked: %s\n", b)
		}
		if r.Outcome == "failed" {
			fmt.Fprintf(e.stdout, "error class: %s\nerror: %s\n", r.Class, r.Error)
			return exitFailure
		}
		return exitOK
	}
	return e.usage(fmt.Sprintf("unknown subcommand %q", sub))
}

func cmdRequests(e *env, args []string) int {
	pos, code, ok := e.parseSub(args, "list", "approve", "reject")
	if !ok {
		return code
	}
	if pos[0] == "list" {
		return callTable(e, "requests.list", map[string]string{}, 30*time.Second, "REQUEST\tTASK\tBY\tASKED\tSOURCE\tSCHEDULE\tNOTIFY", func(r requestView) []string {
			return []string{r.ID, r.Task, r.By, when(&r.At), r.Where.String(), dash(r.Sched), strings.Join(r.Notify, ", ")}
		})
	}
	if len(pos) < 2 {
		return e.usage("want approve ID or reject ID [REASON]")
	}
	var t taskView
	in := map[string]string{"id": pos[1], "reason": strings.Join(pos[2:], " ")}
	if code := e.do("requests."+pos[0], in, &t, 10*time.Second); code != exitOK {
		return code
	}
	if e.json {
		e.printJSON(t)
		return exitOK
	}
	fmt.Fprintln(e.stdout, decidedLine(pos[0], pos[1], t))
	return exitOK
}

func cmdLedger(e *env, args []string) int {
	yes := e.flags.Bool("yes", false, "with redeliver: do not ask for confirmation")
	limit := e.flags.Int("limit", 100, "with show: at most this many effects")
	rng := rangeFlags(e)
	pos, code, ok := e.parseSub(args, "show", "redeliver")
	if !ok {
		return code
	}
	if rng.recipient != "" {
		if len(pos) != 1 || pos[0] != "redeliver" {
			return e.usage("--recipient goes with redeliver alone: redeliver --recipient NAME [--state failed|unknown] [--since T] [--until T] [--dry-run]")
		}
		return redeliverRange(e, rng, *yes)
	}
	if len(pos) != 2 {
		return e.usage("want show TASK or redeliver EFFECT-ID")
	}
	switch pos[0] {
	case "show":
		in := map[string]any{"task": pos[1], "limit": *limit}
		return callTable(e, "ledger.show", in, 30*time.Second, "EFFECT\tSTATE\tATTEMPTS\tRECIPIENT\tUPDATED\tERROR", func(f effectView) []string {
			return []string{f.Key, f.State, fmt.Sprint(f.Attempts), f.Recipient, f.UpdatedAt.Local().Format("01-02 15:04:05 MST"), dash(f.Error)}
		})
	case "redeliver":
		if code, ok := confirm(e, *yes, "redeliver sends the push again",
			fmt.Sprintf("Send effect %s again? It may reach the recipient twice.", pos[1])); !ok {
			return code
		}
		f, code, done := call[effectView](e, "ledger.redeliver", map[string]string{"key": pos[1]}, 10*time.Second)
		if done {
			return code
		}
		fmt.Fprintf(e.stdout, "%s queued again (attempt %d will follow)\n", f.Key, f.Attempts+1)
		return exitOK
	}
	return e.usage(fmt.Sprintf("unknown subcommand %q", pos[0]))
}

// confirm asks question on a terminal unless yes; off a terminal it
// wants --yes. ok: go ahead; else exit with code.
func confirm(e *env, yes bool, what, question string) (code int, ok bool) {
	if yes {
		return exitOK, true
	}
	if f, ok := e.stdin.(*os.File); !ok || !isatty.IsTerminal(f.Fd()) {
		return e.usage(what + "; confirm with --yes when not on a terminal"), false
	}
	fmt.Fprintf(e.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintln(e.stderr, "not redelivered")
		return exitFailure, false
	}
	return exitOK, true
}

// shortInboxID is an inbox item's number as chat shows it ("7" for
// 0000000000000007); fullInboxID reads it back.
func shortInboxID(id string) string {
	if s := strings.TrimLeft(id, "0"); s != "" {
		return s
	}
	return id
}

func fullInboxID(id string) string {
	if len(id) < 16 && id != "" && strings.Trim(id, "0123456789") == "" {
		return strings.Repeat("0", 16-len(id)) + id
	}
	return id
}

func cmdInbox(e *env, args []string) int {
	unread := e.flags.Bool("unread", false, "with list: unread items only")
	pos, code, ok := e.parseSub(args, "list", "read", "token")
	if !ok {
		return code
	}
	if len(pos) < 2 {
		return e.usage("want list PRINCIPAL, read PRINCIPAL ID|all or token PRINCIPAL")
	}
	switch pos[0] {
	case "list":
		in := map[string]any{"principal": pos[1], "unread": *unread}
		return callTable(e, "inbox.list", in, 10*time.Second, " \tID\tWHEN\tTITLE", func(it inboxView) []string {
			mark := " "
			if !it.Read {
				mark = "*"
			}
			return []string{mark, shortInboxID(it.ID), it.CreatedAt.Local().Format("01-02 15:04 MST"), it.Title}
		})
	case "read":
		if len(pos) != 3 {
			return e.usage("read needs PRINCIPAL and an item id or all")
		}
		var n struct {
			Marked int `json:"marked"`
		}
		if code := e.do("inbox.read", map[string]string{"principal": pos[1], "id": pos[2]}, &n, 10*time.Second); code != exitOK {
			return code
		}
		if e.json {
			e.printJSON(n)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "%d item(s) marked read\n", n.Marked)
		return exitOK
	case "token":
		var t struct {
			Token string `json:"token"`
			URL   string `json:"url,omitempty"` // the inbox API's public address, when the service knows one
		}
		if code := e.do("inbox.token", map[string]string{"principal": pos[1]}, &t, 10*time.Second); code != exitOK {
			return code
		}
		if t.URL == "" {
			t.URL = e.serviceURL("/api/v1/inbox")
		}
		if e.json {
			e.printJSON(t)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "%s\nUse it as: curl -H 'Authorization: Bearer <token>' %s\n", t.Token, t.URL)
		return exitOK
	}
	return e.usage(fmt.Sprintf("unknown subcommand %q", pos[0]))
}

func cmdSendTest(e *env, args []string) int {
	follow := e.flags.Bool("follow", isTerminal(e.stdout), "after the first attempt's outcome, report later attempts as they come (default on a terminal)")
	recipient, code, ok := e.parseOne(args, "want exactly one RECIPIENT")
	if !ok {
		return code
	}
	var v sendTestView
	// The service answers within sendTestWait; the rest is for the trip.
	if code := e.do("send-test", map[string]string{"recipient": recipient}, &v, sendTestWait+15*time.Second); code != exitOK {
		return code
	}
	e.printTestOutcome(v, true)
	if *follow && !v.settled() {
		fmt.Fprintln(e.stderr, "Following the next attempts as they come; Ctrl-C stops following (the push stays queued).")
	}
	for *follow && !v.settled() {
		var next sendTestView
		in := map[string]any{"effect": v.Effect, "recipient": recipient, "attempts": v.Attempts}
		if err := e.try("send-test.follow", in, &next, sendTestWait+15*time.Second); err != nil {
			return e.fail(err)
		}
		if next.Attempts > v.Attempts || next.settled() {
			e.printTestOutcome(next, false)
		}
		v = next
	}
	if v.Outcome != "completed" {
		return exitFailure
	}
	return exitOK
}

// settled: nothing more will be tried, or what was tried may have
// arrived (an unknown outcome is never sent again by itself).
func (v sendTestView) settled() bool {
	return v.State != "pending" || (v.Outcome == "unknown" && v.Reason != "no_answer_yet")
}

// printTestOutcome prints one attempt's outcome: the first in full, a
// later one as one line.
func (e *env) printTestOutcome(v sendTestView, first bool) {
	if e.json {
		e.printJSON(v)
		return
	}
	if !first {
		fmt.Fprintf(e.stdout, "attempt %d: ", v.Attempts)
	}
	fmt.Fprintf(e.stdout, "%s: %s", v.Recipient, v.Outcome)
	if v.Outcome == "retry_after" && v.RetryIn > 0 {
		fmt.Fprintf(e.stdout, " %s", time.Duration(v.RetryIn*float64(time.Second)))
	}
	if v.Reason != "" {
		fmt.Fprintf(e.stdout, " (%s)", v.Reason)
	}
	if first {
		fmt.Fprintf(e.stdout, " after %d attempt(s) in %.1fs\n", v.Attempts, v.Elapsed)
	} else {
		fmt.Fprintln(e.stdout)
	}
	if what := sendTestMeaning(v); what != "" && (first || v.settled()) {
		fmt.Fprintln(e.stdout, what)
	}
	if first {
		fmt.Fprintf(e.stdout, "effect %s\n", v.Effect)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// sendTestMeaning says what a test push's outcome means for the push.
func sendTestMeaning(v sendTestView) string {
	switch {
	case v.Outcome == "failed":
		return "The receiver refused the push; it is not sent again."
	case v.Outcome == "retry_after":
		return "Not sent; herald tries again until the push expires."
	case v.Reason == "no_answer_yet":
		return fmt.Sprintf("No answer from the receiver in %.0fs; the push may arrive. `herald ledger show test` shows how it ends.", sendTestWait.Seconds())
	case v.Outcome == "unknown":
		return "The push may have arrived; it is not sent again unless the receiver drops repeats."
	case v.Outcome == "pending":
		return fmt.Sprintf("No attempt began in %.0fs; the push is queued. `herald ledger show test` shows how it ends.", sendTestWait.Seconds())
	}
	return ""
}
