package delivery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks/schedule"
)

// Digests (docs/delivery.md, Digests): a recipient with a digest
// schedule (recipients.<name>.digest, or /digest in a chat) takes its
// change notices as one message at each fire of that schedule.
//
//   - The digest stage holds a task's notices to such a recipient until
//     the next fire (reasonDigest), like quiet hours do: durably, in the
//     ledger, without an attempt. A deadline reminder due before the next
//     fire is not held, nor is anything quiet hours or a mute hold now
//     (the hold stage has it; when that hold ends it comes back here), nor
//     a push attempted before (it goes again as it went).
//   - At the fire the held notices fall due. The first batch of them the
//     dispatcher takes gathers every notice held for that recipient and
//     window and claims one digest (KindDigest) under a key derived from
//     the recipient and the window alone, so that replicas and restarts
//     agree on it (I1). Its payload names the notices it carries
//     (DigestInfo.Members). The claim that won is the digest: a batch
//     whose claim is refused reads the winner's members.
//   - Then each member ends, completed, as sent on in that digest: begun
//     under a worker name that carries the digest's key (digestWorker),
//     and settled. A crash in between leaves that name on the attempt,
//     and the member ends so when it comes round again. A held notice the
//     digest does not carry (it was held late, on a replica with a slow
//     clock) is held again for the next fire.
//   - The digest itself is a push like any other: quiet hours hold it,
//     and the ledger delivers it once (I3).
//
// A window with nothing held sends nothing: a digest is claimed only by
// the notices it carries.

// DigestPolicy tells whether a recipient takes its change notices as
// digests. chat is the chat whose preferences apply to recipient
// (/digest; holdAddress).
type DigestPolicy interface {
	Digest(ctx context.Context, recipient, chat string) (DigestPlan, bool)
}

// DigestPlan is one recipient's digest: when it fires and how many items
// one lists.
type DigestPlan struct {
	Schedule schedule.Schedule
	// MaxItems is how many items a digest lists (DefaultDigestMaxItems
	// when 0); the rest go to the recipient's inbox when it has one, else
	// the digest counts them.
	MaxItems int
}

// DefaultDigestMaxItems is how many items a digest lists unless
// digest_max_items says otherwise.
const DefaultDigestMaxItems = 50

// next is the plan's first fire strictly after now. An `every`
// schedule fires on a fixed grid (multiples of its interval since the
// Unix epoch), so every push and every replica agree on the window
// whenever they ask.
func (p DigestPlan) next(now time.Time) (time.Time, bool) {
	if p.Schedule == nil {
		return time.Time{}, false
	}
	if p.Schedule.Kind() == schedule.KindEvery {
		step, err := schedule.ParseDuration(strings.TrimSpace(strings.TrimPrefix(p.Schedule.String(), schedule.KindEvery)))
		if err == nil && step > 0 {
			return time.Unix(0, 0).UTC().Add(now.Sub(time.Unix(0, 0)).Truncate(step) + step), true
		}
	}
	at, err := p.Schedule.Next(now)
	return at, err == nil
}

func (p DigestPlan) maxItems() int {
	if p.MaxItems > 0 {
		return p.MaxItems
	}
	return DefaultDigestMaxItems
}

// Reasons and names of the digest's ledger entries.
const (
	// reasonDigest is recorded on a notice held for its recipient's digest.
	reasonDigest = "held: digest"
	// reasonInDigest, followed by the digest's key, ends a notice the
	// digest carries.
	reasonInDigest = "sent on in digest "
	// DigestSource is the task id digests are claimed under (herald
	// ledger show digest).
	DigestSource = "digest"
	// digestWorkerPrefix starts the worker name a member of a digest is
	// ended under; the digest's key follows.
	digestWorkerPrefix = "digest:"
	// digestScan bounds how many due pushes one gathering reads.
	digestScan = 10000
)

func digestWorker(key string) string { return digestWorkerPrefix + key }

// digestKey is the claim-once key of recipient's digest for window.
func digestKey(recipient string, window time.Time) string {
	return EffectKey(DigestSource, window.UTC().Format(time.RFC3339Nano), recipient)
}

// digest holds a batch's notices for the recipient's digest, and at a
// fire gathers the ones that fell due into it (see Digests above).
func digest(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if !ordered(b.fx[0].Kind) {
		return pass(b)
	}
	chat := holdAddress(b.recipient(), b.route)
	plan, on := d.digestPlan(ctx, b.recipient(), chat, b.route)
	if !on && !heldForDigest(b.fx) {
		return pass(b)
	}
	// An `at` digest that fired has no next fire: it still gathers what
	// it held, and holds nothing more.
	next, more := plan.next(b.now)
	windows := map[time.Time][]store.Effect{}
	var keep, wait []store.Effect
	for _, fx := range b.fx {
		switch {
		case carriedBy(fx) != "":
			d.endMember(ctx, fx, carriedBy(fx))
		case on && fx.Error == reasonDigest && !fx.NotBefore.After(b.now):
			windows[fx.NotBefore] = append(windows[fx.NotBefore], fx)
		case on && more && d.holdForDigest(ctx, b, chat, fx, next):
			wait = append(wait, fx)
		default:
			keep = append(keep, fx)
		}
	}
	for window := range windows {
		d.gather(ctx, b, plan, window, next)
	}
	d.holdAll(ctx, b, wait, next, reasonDigest)
	if len(keep) == 0 {
		return nil
	}
	b.fx = keep
	return pass(b)
}

// digestPlan is the digest of recipient, reached by route: the named
// recipient's own, else the one its chat set.
func (d *Dispatcher) digestPlan(ctx context.Context, recipient, chat string, route Route) (DigestPlan, bool) {
	if route.Digest.Schedule != nil {
		return route.Digest, true
	}
	if d.o.Digests == nil {
		return DigestPlan{}, false
	}
	return d.o.Digests.Digest(ctx, recipient, chat)
}

// heldForDigest reports whether any of fxs was held for a digest, or
// begun as a member of one.
func heldForDigest(fxs []store.Effect) bool {
	return slices.ContainsFunc(fxs, func(fx store.Effect) bool { return fx.Error == reasonDigest || carriedBy(fx) != "" })
}

// PrefDigests is the DigestPolicy of chats: the digest a chat set with
// /digest (chatprefs), read in the chat's zone.
type PrefDigests struct {
	Prefs *chatprefs.Store
}

// Digest implements DigestPolicy.
func (p PrefDigests) Digest(ctx context.Context, _, chat string) (DigestPlan, bool) {
	if !hasPrefs(chat) {
		return DigestPlan{}, false
	}
	prefs, err := p.Prefs.Get(ctx, chat)
	if err != nil || prefs.Digest == "" {
		return DigestPlan{}, false
	}
	s, err := schedule.Parse(prefs.Digest, p.Prefs.Location(prefs))
	if err != nil {
		return DigestPlan{}, false
	}
	return DigestPlan{Schedule: s}, true
}

var _ DigestPolicy = PrefDigests{}

// holdForDigest reports whether fx waits for the digest that fires at
// next: not a reminder due before it (nor any reminder to a webhook,
// whose body carries one type), not a push attempted before or past its
// expiry, not one that quiet hours or a mute hold now.
func (d *Dispatcher) holdForDigest(ctx context.Context, b *batch, chat string, fx store.Effect, next time.Time) bool {
	switch {
	case len(fx.Attempts) > 0:
		return false
	case !fx.ExpiresAt.IsZero() && !b.now.Before(fx.ExpiresAt):
		return false
	case fx.Kind == KindDeadline && (b.route.To.Kind == Webhook || !fx.ExpiresAt.After(next)):
		return false
	}
	if d.o.Holds != nil {
		if _, held := d.o.Holds.Hold(ctx, chat, fx.TaskID, time.Time{}, b.now); held {
			return false
		}
	}
	return true
}

// gather claims the digest of b's recipient for window, unless it was
// claimed already, and ends the notices it carries.
func (d *Dispatcher) gather(ctx context.Context, b *batch, plan DigestPlan, window, next time.Time) {
	log := b.log(d)
	recipient := b.recipient()
	queued, err := d.o.Ledger.Due(ctx, b.now, digestScan)
	if err != nil {
		log.Warn().Err(err).Msg("cannot read the notices held for a digest; trying again")
		return // they stay due: the next look at the queue gathers them
	}
	var held []store.Effect
	for _, fx := range queued {
		if fx.Recipient != recipient || fx.Error != reasonDigest || !fx.NotBefore.Equal(window) || !ordered(fx.Kind) {
			continue
		}
		if json.Unmarshal(fx.Payload, new(Message)) != nil {
			d.expire(ctx, fx.Key, "bad_payload", b.now) // it can be in no message
			continue
		}
		held = append(held, fx)
	}
	if len(held) == 0 {
		return
	}
	slices.SortStableFunc(held, claimOrder)
	key := digestKey(recipient, window)
	members, err := d.claimDigest(ctx, b, plan, key, window, held)
	if err != nil {
		log.Warn().Err(err).Msg("cannot claim a digest; trying again")
		return
	}
	in := make(map[string]bool, len(members))
	for _, k := range members {
		in[k] = true
	}
	d.each(len(held), func(i int) {
		fx := held[i]
		if in[fx.Key] {
			d.endMember(ctx, fx, key)
			return
		}
		// Held for a digest that was claimed without it: the next one.
		if !next.IsZero() {
			if _, err := d.o.Ledger.Defer(ctx, fx.Key, next, reasonDigest, b.now); err != nil {
				log.Warn().Err(err).Msg("cannot hold a push for the next digest")
			}
		}
	})
	d.Wake()
}

// claimDigest claims the digest under key with held as its members and
// returns the members of the digest the ledger holds under key: these,
// or those of an earlier claim (another replica, or before a restart).
func (d *Dispatcher) claimDigest(ctx context.Context, b *batch, plan DigestPlan, key string, window time.Time, held []store.Effect) ([]string, error) {
	if fx, err := d.o.Ledger.Get(ctx, key); err == nil {
		return digestMembers(fx)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	msg, rest, err := digestMessage(held, window, plan.maxItems())
	if err != nil {
		return nil, err
	}
	recipient := b.recipient()
	inbox := ownerInbox(b.route)
	if rest != nil && inbox != "" {
		msg.Digest.Inbox = true
	}
	effects := []store.Effect{d.digestEffect(key, recipient, window, msg, b.now)}
	if rest != nil && inbox != "" {
		effects = append(effects, d.digestEffect(EffectKey(DigestSource, window.UTC().Format(time.RFC3339Nano)+"/rest", recipient), inbox, window, *rest, b.now))
	}
	res, err := d.o.Ledger.Commit(ctx, store.RunCommit{TaskID: DigestSource, Effects: effects})
	if err != nil {
		return nil, err
	}
	if slices.Contains(res.Claimed, key) {
		return msg.Digest.Members, nil
	}
	fx, err := d.o.Ledger.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return digestMembers(fx)
}

func (d *Dispatcher) digestEffect(key, recipient string, window time.Time, msg Message, now time.Time) store.Effect {
	payload, _ := json.Marshal(msg) // a Message always encodes
	return store.Effect{Key: key, TaskID: DigestSource, Recipient: recipient, Kind: KindDigest, Payload: payload,
		State: store.Pending, NotBefore: now, ExpiresAt: now.Add(ChangeTTL), CreatedAt: now, UpdatedAt: now,
		RunID: DigestSource + "/" + window.UTC().Format(time.RFC3339)}
}

// digestMembers reads the members of a claimed digest.
func digestMembers(fx store.Effect) ([]string, error) {
	var m Message
	if err := json.Unmarshal(fx.Payload, &m); err != nil {
		return nil, err
	}
	if m.Digest == nil {
		return nil, errors.New("digest without its members")
	}
	return m.Digest.Members, nil
}

// digestMessage builds the digest of held (in their claim order): each
// task's notices folded as a held group is (merge), the items named by
// their task, news before changes and removals. Past max items the rest
// is returned as a second message, for the recipient's inbox.
func digestMessage(held []store.Effect, window time.Time, max int) (Message, *Message, error) {
	var tasks []string
	byTask := map[string][]store.Effect{}
	members := make([]string, len(held))
	for i, fx := range held {
		members[i] = fx.Key
		if _, ok := byTask[fx.TaskID]; !ok {
			tasks = append(tasks, fx.TaskID)
		}
		byTask[fx.TaskID] = append(byTask[fx.TaskID], fx)
	}
	var items []Item
	for _, t := range tasks {
		m, _, err := merge(byTask[t])
		if err != nil {
			return Message{}, nil, err
		}
		for _, it := range m.Items {
			it.Task = cmp.Or(m.TaskName, m.TaskID)
			items = append(items, it)
		}
	}
	sortItems(items)
	msg := Message{Kind: KindDigest, Items: items, OccurredAt: window, Digest: &DigestInfo{Window: window, Members: members}}
	if len(items) <= max {
		return msg, nil, nil
	}
	msg.Items, msg.More = items[:max:max], len(items)-max
	rest := Message{Kind: KindDigest, Items: items[max:], OccurredAt: window, Digest: &DigestInfo{Window: window}}
	return msg, &rest, nil
}

// ownerInbox is the inbox of the person a route reaches, where a
// digest's items beyond those it lists wait: an inbox itself, a private
// Telegram chat's or a Feishu user's; "" for groups and named sinks.
func ownerInbox(r Route) string {
	a := r.To
	switch {
	case a.Kind == InboxAddr:
		return a.literal().String()
	case a.Kind == TelegramChat && a.Topic == "" && a.ID != "" && !strings.HasPrefix(a.ID, "-"):
		return "inbox:telegram:" + a.ID
	case a.Kind == FeishuChat && a.IDType == "open_id":
		return "inbox:feishu:" + a.ID
	}
	return ""
}

// carriedBy returns the key of the digest that carries fx, when fx came
// round again after a crash while it was being ended (endMember).
func carriedBy(fx store.Effect) string {
	n := len(fx.Attempts)
	if n == 0 || fx.State != store.Pending || fx.InFlight {
		return ""
	}
	key, ok := strings.CutPrefix(fx.Attempts[n-1].By, digestWorkerPrefix)
	if !ok {
		return ""
	}
	return key
}

// endMember ends a notice the digest under key carries: completed, as
// sent on in it. The attempt is begun under a worker name that carries
// the key, so a crash before the settle leaves it known (carriedBy).
func (d *Dispatcher) endMember(ctx context.Context, fx store.Effect, key string) {
	if _, err := d.o.Ledger.Begin(ctx, fx.Key, digestWorker(key), fx.Version(), d.o.Now()); err != nil {
		return // another batch ended it, or it is no longer queued
	}
	d.settleKey(ctx, fx.Key, store.Outcome{State: store.Completed, Error: reasonInDigest + key})
}
