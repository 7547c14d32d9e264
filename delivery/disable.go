package delivery

import (
	"context"
	"sync"
	"time"

	"github.com/herald-bridge/herald/store"
)

// Disabling (SPEC §21). A recipient is disabled when its service says it
// is gone for good (Outcome.Gone: a webhook's 410, a Telegram chat that
// blocked the bot, a robot whose key was reset), or when a recipient with
// a DisableAfter has failed for that long without a single success. The
// switch is kept in Options.Recipients, shared by every replica; its
// pushes then end failed (recipient_disabled) without an attempt until a
// human enables it again. One mechanism serves every sink: a sink only
// reports Gone.

// ReasonDisabled ends the pushes of a disabled recipient.
const ReasonDisabled = "recipient_disabled"

// ReasonNoSuccess is why a recipient failing for DisableAfter was disabled.
const ReasonNoSuccess = "no_success"

// disabledFor is how long this process trusts its list of the disabled
// recipients before it reads the list again: a recipient disabled on
// another replica is skipped here within that time. One on the list is
// read again before each group, so an enable counts at once.
const disabledFor = 2 * time.Second

// successEvery bounds how often a run of successes is written down per
// recipient by this process.
const successEvery = time.Minute

// recipientCache spares the store a read per push, and a write per
// success for recipients that are not failing.
type recipientCache struct {
	mu       sync.Mutex
	disabled map[string]bool // the recipients disabled when last read
	until    time.Time       // when to read them again
	okAt     map[string]time.Time
}

// isDisabled reports whether recipient is disabled now, and its state.
func (d *Dispatcher) isDisabled(ctx context.Context, recipient string, now time.Time) (RecipientState, bool) {
	rs := d.o.Recipients
	if rs == nil {
		return RecipientState{}, false
	}
	c := &d.recips
	c.mu.Lock()
	if !now.Before(c.until) {
		c.mu.Unlock()
		off, err := rs.Disabled(ctx)
		c.mu.Lock()
		if err != nil {
			d.o.Log.Warn().Err(err).Msg("cannot read which recipients are disabled; sending")
		} else {
			c.disabled, c.until = map[string]bool{}, now.Add(disabledFor)
			for _, st := range off {
				c.disabled[st.Recipient] = true
			}
		}
	}
	listed := c.disabled[recipient]
	c.mu.Unlock()
	if !listed {
		return RecipientState{}, false
	}
	st, err := rs.Get(ctx, recipient)
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("cannot read whether a recipient is disabled; sending")
		return st, false
	}
	if !st.Disabled {
		c.mu.Lock()
		delete(c.disabled, recipient)
		c.mu.Unlock()
	}
	return st, st.Disabled
}

// skipDisabled ends the pushes of a disabled recipient unsent: failed
// (recipient_disabled), without an attempt.
func skipDisabled(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if _, off := d.isDisabled(ctx, b.recipient(), b.now); !off {
		return pass(b)
	}
	if b.claimed {
		d.settleAll(ctx, b.fx, func(store.Effect) store.Outcome {
			return store.Outcome{State: store.Failed, Error: ReasonDisabled}
		})
		return nil
	}
	d.each(len(b.fx), func(i int) { d.expire(ctx, b.fx[i].Key, ReasonDisabled, b.now) })
	return nil
}

// standing writes down how the attempt went for a recipient with a
// disable policy, and disables the recipient when the service said it is
// gone or it has failed for DisableAfter without a success; a push whose
// attempt disabled it ends failed (its own reason, or recipient_disabled).
func standing(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	rs := d.o.Recipients
	if rs == nil {
		return pass(b)
	}
	r, now, out := b.recipient(), d.o.Now(), b.out
	if out.Gone {
		d.disable(ctx, b, out.Reason, now)
		return pass(b)
	}
	after := b.route.Retry.DisableAfter
	if after <= 0 {
		return pass(b)
	}
	if out.Result == Completed {
		if d.successWritten(r, now) {
			return pass(b)
		}
		if _, err := rs.Attempted(ctx, r, true, "", now); err != nil {
			d.o.Log.Warn().Err(err).Msg("cannot record a recipient's success")
		}
		return pass(b)
	}
	d.recips.mu.Lock()
	delete(d.recips.okAt, r)
	d.recips.mu.Unlock()
	st, err := rs.Attempted(ctx, r, false, out.Reason, now)
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("cannot record a recipient's failure")
		return pass(b)
	}
	if !st.FailingSince.IsZero() && now.Sub(st.FailingSince) >= after {
		d.disable(ctx, b, ReasonNoSuccess, now)
		b.out = Outcome{Result: Failed, Reason: ReasonDisabled}
	}
	return pass(b)
}

// successWritten reports whether a success of r was written recently by
// this process, and notes one now if not.
func (d *Dispatcher) successWritten(r string, now time.Time) bool {
	c := &d.recips
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.okAt[r]; ok && now.Sub(at) < successEvery {
		return true
	}
	if c.okAt == nil {
		c.okAt = map[string]time.Time{}
	}
	c.okAt[r] = now
	return false
}

// disable turns the batch's recipient off and, when this turned it off,
// tells the Disabled hook (a notice, once per generation: the hook's
// claim makes it one across replicas).
func (d *Dispatcher) disable(ctx context.Context, b *batch, reason string, now time.Time) {
	r := b.recipient()
	st, changed, err := d.o.Recipients.Disable(ctx, r, reason, now)
	if err != nil {
		d.o.Log.Warn().Err(err).Msg("cannot disable a recipient")
		return
	}
	d.recips.mu.Lock()
	if d.recips.disabled == nil {
		d.recips.disabled = map[string]bool{}
	}
	d.recips.disabled[r] = true
	d.recips.mu.Unlock()
	if !changed {
		return
	}
	d.o.Log.Warn().Str("recipient", b.route.To.Redacted()).Str("reason", reason).Msg("recipient disabled")
	if d.o.Hooks.Disabled != nil {
		d.o.Hooks.Disabled(ctx, b.taskID(), r, st)
	}
}
