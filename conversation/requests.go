package conversation

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/schedule"
	"github.com/herald-bridge/herald/tasks/source"
)

// sourceChecker judges a source's address before a request is made
// (tasks.Manager.CheckSource).
type sourceChecker interface{ CheckSource(rawURL string) error }

func (t *turn) request(cmd Command) []Reply {
	if cmd.Name == "remind" && len(cmd.Before) == 0 {
		cmd.Before = defaultBefore
	}
	// A source the address guard refuses is refused before any question.
	if c, ok := t.c.o.Tasks.(sourceChecker); ok {
		if err := c.CheckSource(cmd.URL); err != nil {
			return t.failed(err)
		}
	}
	if r := t.alreadyWatched(cmd); r != nil {
		return r
	}
	var note string
	if takesToken(cmd) {
		if r, asked := (courseSites{t}).needToken(cmd); asked {
			return r
		}
	} else {
		var stop []Reply
		if note, stop = t.try(cmd); stop != nil {
			return stop
		}
	}
	if cmd.Schedule == "" && cmd.Name == "watch" {
		d := dialog{Ask: "schedule", Command: cmd.Name, URL: cmd.URL, Kind: cmd.Kind, Selector: cmd.Selector, Name: cmd.TaskName, Before: cmd.Before, Courses: cmd.Courses}
		if err := (dialogs{t}).saveDialog(d); err != nil {
			return t.failed(err)
		}
		return []Reply{{Text: note + t.tr("requests.how_often_should_i")}}
	}
	out := t.submit(cmd)
	if note != "" && len(out) > 0 {
		out[0].Text = note + out[0].Text
	}
	return out
}

// clipName keeps a display name short and on one line.
func clipName(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return s
}

// replyTo is the chat the manager may push the task's own notices to
// (baseline, failures): this chat when delivery can reach it, or the
// forum topic the request was sent in. A console chat cannot receive
// pushes; its notices go to the requester's inbox and the decision
// reaches the console through ChatOf(owner).
func (t *turn) replyTo() string { return t.pushable() }

// notifyFor is where a chat request's pushes go: this chat (or its forum
// topic) when it can receive pushes, else the requester's inbox.
func (t *turn) notifyFor() []string {
	if to := t.pushable(); to != "" {
		return []string{to}
	}
	return []string{address.InboxOf(t.m.Principal)}
}

// pushable is the address delivery reaches where the person spoke: the
// forum topic the message was sent in, else the chat; "" when delivery
// cannot reach it (a console).
func (t *turn) pushable() string {
	for _, to := range []string{t.m.Topic, t.m.Chat} {
		if to == "" {
			continue
		}
		if _, err := delivery.ParseAddress(to); err == nil {
			return to
		}
	}
	return ""
}

func (t *turn) submit(cmd Command) []Reply {
	at := cmd.Parsed
	if at == nil { // given in a dialog
		if s, err := schedule.Parse(cmd.Schedule, time.UTC); err == nil {
			at = s
		}
	}
	if at != nil && at.Kind() == schedule.KindAt {
		if _, err := at.Next(t.c.o.Now()); err != nil {
			return t.reply("requests.that_time_has_already")
		}
	}
	cookie, err := signIns{t}.storedCookie(cmd)
	if err != nil {
		return t.failed(err)
	}
	sub := tasks.Submission{
		StoredCookie: cookie,
		Principal:    t.m.Principal, By: clipName(t.m.Name), ReplyTo: t.replyTo(), Lang: t.lang, URL: cmd.URL, Kind: cmd.Kind, Selector: cmd.Selector,
		Schedule: cmd.Schedule, Parsed: cmd.Parsed, Name: cmd.TaskName, Notify: t.notifyFor(),
		Courses: cmd.Courses, StoredToken: takesToken(cmd),
	}
	if cmd.Name == "remind" {
		sub.RemindBefore = cmd.Before
	}
	tk, err := t.c.o.Tasks.Submit(t.ctx, sub)
	if err != nil {
		return t.failed(err)
	}
	return []Reply{{Text: t.summary(tk)}}
}

// summary says what a request covers and where it stands.
func (t *turn) summary(tk *tasks.Task) string {
	u, _ := url.Parse(tk.Source.URL)
	host := ""
	if u != nil {
		host = u.Hostname()
	}
	var b strings.Builder
	what := t.tr("request.watch")
	if len(tk.RemindBefore) > 0 {
		what = t.tr("request.deadline_reminders_from")
	}
	label := tk.Request.ID
	if tk.Name != "" {
		label += " (" + tk.Name + ")"
	}
	fmt.Fprintf(&b, t.tr("requests.request_host"), label, what, source.Shown(tk.Source), host)
	fmt.Fprintf(&b, t.tr("requests.how_often"), t.schedule(tk.Schedule))
	if len(tk.RemindBefore) > 0 {
		fmt.Fprintf(&b, t.tr("requests.reminders_before_each_due"), durations(tk.RemindBefore))
	}
	b.WriteString(t.tr("stop.line"))
	if tk.Source.Kind != "" {
		fmt.Fprintf(&b, t.tr("requests.kind"), tk.Source.Kind)
		if tk.Source.Kind == source.KindHTML {
			if tk.Source.Selector != "" {
				fmt.Fprintf(&b, t.tr("requests.entries_elements_matching"), tk.Source.Selector)
			} else {
				b.WriteString(t.tr("requests.entries_page_repeated_list"))
			}
		}
	} else {
		b.WriteString(t.tr("requests.kind_detected_from_content"))
	}
	fmt.Fprintf(&b, t.tr("requests.who_will_be_told"), t.recipients(tk))
	switch tk.State {
	case tasks.Active:
		fmt.Fprintf(&b, t.tr("requests.approved_task_starts_now"), tk.ID)
	case tasks.PendingApproval:
		b.WriteString(t.tr("requests.it_awaits_admin_approval"))
		if host != "" && !t.c.o.Tasks.Policy().HostAllowed(host) {
			fmt.Fprintf(&b, t.tr("requests.that_url_host_is"), host, tk.Request.ID)
		}
	default:
		fmt.Fprintf(&b, t.tr("requests.state"), t.state(tk.State))
	}
	return b.String()
}

func (t *turn) recipients(tk *tasks.Task) string {
	parts := make([]string, 0, len(tk.Notify))
	for _, r := range tk.Notify {
		parts = append(parts, t.recipient(tk, r))
	}
	return strings.Join(parts, t.tr("list.sep"))
}

func (t *turn) recipient(tk *tasks.Task, r string) string {
	switch {
	case r == t.m.Chat, r == t.m.Topic && r != "":
		return t.tr("requests.this_chat")
	case r == tk.ReplyTo && r != "":
		return t.tr("requests.requesting_chat")
	case r == address.InboxOf(t.m.Principal):
		return t.tr("requests.your_inbox_inbox")
	case address.IsInbox(r):
		return t.tr("recipient.inbox")
	case delivery.IsLiteral(r):
		return t.tr("recipient.another_chat")
	}
	return r // a named recipient: its name is not an address
}

// ShowURL renders a source URL for chat (source.ShowURL): scheme, host
// and path; a query or fragment is elided (it may carry a token).
func ShowURL(raw string) string { return source.ShowURL(raw) }

func durations(ds []time.Duration) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, shortDuration(d))
	}
	return strings.Join(parts, ", ")
}

func shortDuration(d time.Duration) string {
	switch {
	case d >= 7*24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// schedule shows a canonical schedule in the turn's language: its kind
// word, interval units and weekdays all worded ("每 30 分钟", "每周一、四
// 08:00 UTC"); a form it does not know (cron) is shown as stored.
func (t *turn) schedule(s string) string {
	kind, rest, _ := strings.Cut(s, " ")
	switch kind {
	case "every":
		return t.tr("schedule_shown.every", t.interval(rest))
	case "daily", "at":
		return t.tr("schedule_shown."+kind, rest)
	case "weekly":
		days, clock, ok := strings.Cut(rest, " ")
		if !ok {
			break
		}
		names := strings.Split(days, ",")
		for i, d := range names {
			if k := "schedule_shown.day." + d; text.Of(t.lang).Has(k) {
				names[i] = t.tr(k)
			}
		}
		return t.tr("schedule_shown.weekly", strings.Join(names, t.tr("schedule_shown.day_sep")), clock)
	}
	return s
}

// interval words a canonical interval ("30m", "1h30m", "2d") with the
// language's units; one it cannot read is shown as it is.
func (t *turn) interval(s string) string {
	var parts []string
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || !strings.ContainsRune("dhms", rune(rest[i])) {
			return s
		}
		n, _ := strconv.Atoi(rest[:i])
		unit := "schedule_shown.unit." + rest[i:i+1]
		parts = append(parts, t.tr(unit, n))
		rest = rest[i+1:]
	}
	return strings.Join(parts, t.tr("schedule_shown.unit_sep"))
}

// state names a task's state (state.<state> in the catalogue; a state it
// does not know is shown as its words).
func (t *turn) state(s tasks.State) string {
	if k := "state." + string(s); text.Of(t.lang).Has(k) {
		return t.tr(k)
	}
	return strings.ReplaceAll(string(s), "_", " ")
}

// outcome names a run's outcome (outcome.<name> in the catalogue; an
// outcome it does not know is shown as it is).
func (t *turn) outcome(s string) string {
	if s == "" {
		return t.tr("requests.none_yet")
	}
	if text.Of(t.lang).Has("outcome." + s) {
		return t.tr("outcome." + s)
	}
	return s
}

// whenOf shows an instant of tk's in the zone its schedule names, else as
// when does: "daily 23:59 America/New_York" runs next at 23:59 EST.
func (t *turn) whenOf(tk *tasks.Task, at time.Time) string {
	if z := schedule.ZoneOf(tk.Schedule); z != nil && !at.IsZero() {
		return at.In(z).Format("2006-01-02 15:04 MST")
	}
	return t.when(at)
}

// when shows an instant in the person's zone (their chat's, else the
// configured default), with the zone, so "08:00" is never a guess.
func (t *turn) when(at time.Time) string {
	if at.IsZero() {
		return "—"
	}
	zone := t.c.zone()
	if p, err := t.c.o.Prefs.Get(t.ctx, t.m.Chat); err == nil && p.Zone != "" {
		zone = t.c.o.Prefs.Location(p)
	}
	return at.In(zone).Format("2006-01-02 15:04 MST")
}
