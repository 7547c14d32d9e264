package conversation

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
)

// Run follows the manager's changes until ctx ends: each new pending
// request is put to every admin, in the admin's own chat, with Approve and
// Reject buttons; each decision is told to the requesting chat. Both
// happen once per request (remembered in the store's dedup object, so a
// restart does not repeat them). Requests that were pending before Run
// started get their prompts too.
func (c *Core) Run(ctx context.Context) error {
	changes, cancel := c.o.Tasks.Subscribe()
	defer cancel()
	if list, err := c.o.Tasks.List(ctx, ""); err == nil {
		for _, tk := range list {
			if tk.State == tasks.PendingApproval {
				c.prompt(ctx, tk)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch, ok := <-changes:
			if !ok {
				return nil
			}
			c.follow(ctx, ch)
		}
	}
}

// follow reacts to one change signal; the record is re-read.
func (c *Core) follow(ctx context.Context, ch tasks.Change) {
	switch ch.What {
	case "requested", "approved", "rejected":
	default:
		return
	}
	tk, err := c.o.Tasks.Get(ctx, ch.TaskID)
	if err != nil {
		return
	}
	switch {
	case tk.State == tasks.PendingApproval:
		c.prompt(ctx, tk)
	case tk.Decision != nil && (ch.What == "approved" || ch.What == "rejected"):
		c.tellDecision(ctx, tk)
	}
}

// once reports whether ns/id is marked for the first time now.
func (c *Core) once(ctx context.Context, ns, id string) bool {
	first, err := c.o.Store.Dedup().Mark(ctx, ns, id, noticeWindow)
	if err != nil {
		c.log.Warn().Err(err).Msg("notice dedup unavailable; not sending")
		return false
	}
	return first
}

// prompt asks every admin to decide tk's request.
func (c *Core) prompt(ctx context.Context, tk *tasks.Task) {
	p := c.o.Tasks.Policy()
	for _, admin := range p.Admins {
		chat := ChatOf(admin)
		if chat == "" || c.sender(chat) == nil || admin == tk.Owner {
			continue
		}
		if !c.once(ctx, "approval-prompt", tk.Request.ID+"|"+admin) {
			continue
		}
		t := &turn{c: c, ctx: ctx, m: Message{Chat: chat, Principal: admin}, lang: c.chatLang(ctx, chat)}
		r := Reply{Text: approvals{t}.promptText(tk, p), Buttons: []Button{
			{Label: t.tr("approvals.approve"), Action: "approve", Arg: tk.Request.ID},
			{Label: t.tr("approvals.reject"), Action: "reject", Arg: tk.Request.ID},
		}}
		if err := c.say(ctx, chat, r); err != nil {
			c.log.Warn().Str("request", tk.Request.ID).Str("channel", channelOf(chat)).Err(err).Msg("approval prompt not sent")
		}
	}
}

// approvals puts a request to an admin and takes the admin's decision,
// typed or pressed, for a turn.
type approvals struct{ t *turn }

func (ap approvals) promptText(tk *tasks.Task, p tasks.Policy) string {
	var b strings.Builder
	what := ap.t.tr("request.watch")
	if len(tk.RemindBefore) > 0 {
		what = ap.t.tr("request.deadline_reminders_from")
	}
	host := ""
	if u, err := url.Parse(tk.Source.URL); err == nil {
		host = u.Hostname()
	}
	from := tk.Owner
	if tk.Request.Name != "" {
		from = tk.Request.Name + " (" + tk.Owner + ")"
	}
	fmt.Fprintf(&b, ap.t.tr("approvals.request_from_host"),
		tk.Request.ID, from, what, source.Shown(tk.Source), host, ap.t.schedule(tk.Schedule))
	fmt.Fprintf(&b, ap.t.tr("approvals.pushes_go_to"), ap.notifyKinds(tk))
	courseSites{ap.t}.courseSite(&b, tk)
	if host != "" && !p.HostAllowed(host) {
		b.WriteString(ap.t.tr("approvals.host_is_not_in"))
	}
	fmt.Fprintf(&b, ap.t.tr("approvals.approve_or_reject_reason"), tk.Request.ID, tk.Request.ID)
	return b.String()
}

// notifyKinds names the recipients for an admin without their addresses.
func (ap approvals) notifyKinds(tk *tasks.Task) string {
	parts := make([]string, 0, len(tk.Notify))
	for _, r := range tk.Notify {
		switch {
		case r == tk.ReplyTo && r != "":
			parts = append(parts, ap.t.tr("approvals.requester_chat"))
		case r == address.InboxOf(tk.Owner):
			parts = append(parts, ap.t.tr("approvals.requester_inbox"))
		case address.IsInbox(r):
			parts = append(parts, ap.t.tr("recipient.inbox"))
		case strings.Contains(r, ":"):
			parts = append(parts, ap.t.tr("recipient.another_chat"))
		default:
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, ap.t.tr("list.sep"))
}

// tellDecision tells the requesting chat who decided its request.
func (c *Core) tellDecision(ctx context.Context, tk *tasks.Task) {
	d := tk.Decision
	chat := tk.ReplyTo
	if chat == "" && tk.Origin == tasks.OriginChat {
		chat = ChatOf(tk.Owner)
	}
	if chat == "" || d.Auto || (d.By != "" && d.By == tk.Owner) || c.sender(chat) == nil {
		return // the requester already heard it in the reply to the request
	}
	if !c.once(ctx, "decision", tk.Request.ID) {
		return
	}
	lang := c.chatLang(ctx, chat) // pinned or last used there
	if p, err := c.o.Prefs.Get(ctx, chat); err != nil || normLang(p.Lang) == "" {
		if l := normLang(tk.Lang); l != "" {
			lang = l // never talked there since: the request's language
		}
	}
	t := &turn{c: c, ctx: ctx, m: Message{Chat: chat, Principal: tk.Owner}, lang: lang}
	var text string
	if d.Approved {
		text = t.tr("approvals.your_request_was_approved", tk.Request.ID, who(d.By, t), tk.ID, name(tk))
	} else {
		text = t.tr("approvals.your_request_was_rejected", tk.Request.ID, name(tk), who(d.By, t))
		if d.Reason != "" {
			text += t.tr("reason.suffix", d.Reason)
		}
		text += t.tr("stop")
	}
	if err := c.say(ctx, chat, Reply{Text: text}); err != nil {
		c.log.Warn().Str("request", tk.Request.ID).Str("channel", channelOf(chat)).Err(err).Msg("decision notice not sent")
	}
}

// chatLang is the language remembered for a chat, else the default.
func (c *Core) chatLang(ctx context.Context, chat string) string {
	if p, err := c.o.Prefs.Get(ctx, chat); err == nil && normLang(p.Lang) != "" {
		return normLang(p.Lang)
	}
	return c.lang()
}

// decide approves or rejects a request, typed or pressed.
func (ap approvals) decide(id string, approve bool, reason string, pressed bool) []Reply {
	if !ap.t.c.o.Tasks.Policy().IsAdmin(ap.t.m.Principal) {
		key := "approvals.only_admin_approves"
		if !approve {
			key = "approvals.only_admin_rejects"
		}
		if pressed {
			return []Reply{{Toast: ap.t.tr(key)}}
		}
		return ap.t.reply(key)
	}
	var tk *tasks.Task
	var err error
	if approve {
		tk, err = ap.t.c.o.Tasks.Approve(ap.t.ctx, ap.t.m.Principal, id)
	} else {
		tk, err = ap.t.c.o.Tasks.Reject(ap.t.ctx, ap.t.m.Principal, id, reason)
	}
	if err != nil {
		msg := ap.t.errText(err)
		if pressed {
			return []Reply{{Text: msg, Edit: true, Toast: msg}}
		}
		return []Reply{{Text: msg}}
	}
	var text, toast string
	if approve {
		text = ap.t.tr("approvals.approved_by_task_is", tk.Request.ID, ap.t.m.Principal, tk.ID, name(tk))
		toast = ap.t.tr("approvals.approved")
	} else {
		text = ap.t.tr("approvals.rejected_by", tk.Request.ID, ap.t.m.Principal, name(tk))
		toast = ap.t.tr("approvals.rejected")
	}
	if pressed {
		return []Reply{{Text: text, Edit: true, Toast: toast}}
	}
	return []Reply{{Text: text}}
}

// press answers a button.
func (ap approvals) press(p Press) []Reply {
	switch p.Action {
	case "approve", "reject":
		if !validID(p.Arg) {
			return []Reply{{Toast: ap.t.tr("button.no_longer_valid")}}
		}
		return ap.decide(p.Arg, p.Action == "approve", "", true)
	case actionDraftSend, actionDraftDrop:
		return plainTalk{ap.t}.pressDraft(p)
	case actionFeed:
		return feedOffer{ap.t}.press(p)
	}
	return []Reply{{Toast: ap.t.tr("button.no_longer_valid")}}
}

// Pending reports whether request id still awaits a decision; a request
// that cannot be read counts as pending (its prompt is kept, not lost).
// A channel that holds prompts until a person reads them (the console)
// drops those whose request was decided meanwhile.
func (c *Core) Pending(ctx context.Context, id string) bool {
	tk, err := c.o.Tasks.Get(ctx, id)
	return err != nil || tk.State == tasks.PendingApproval
}
