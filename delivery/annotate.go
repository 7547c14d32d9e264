package delivery

import (
	"context"
	"errors"
	"sync"
)

// Model writes the machine-written part of a notice (SPEC §20): a short
// summary when the notice's task asks for one (summarize), a translation
// into translate when its recipient asks for one. It is bounded by its
// own timeout and budget; ErrNothingAsked when m asks for nothing.
//
// What the model answers is only ever text shown in the notice: the
// notice's recipients, kind and items are the dispatcher's, fixed before
// the model is asked, and nothing it says is read as a command.
type Model interface {
	Annotate(ctx context.Context, m Message, translate string) (MachineText, error)
}

// ErrNothingAsked is a Model's answer for a notice that asks for no
// machine-written text.
var ErrNothingAsked = errors.New("nothing asked of the model")

// annotate adds the model's text to a notice, asked once, before its
// first part; every part this delivery sends renders the message with it
// (it comes last, so the parts before it read the same either way). On
// any failure (an error, its timeout, its budget spent) the notice goes
// on as it is, at once. A message resumed after a restart goes without.
// A scheduled retry (retry.go) is asked nothing: it sends the text its
// first attempt sent, remembered by this process, so that every attempt
// carries the same body; after a restart a retry goes without it.
func annotate(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if d.o.Model == nil || b.msg == nil || b.msg.Machine != nil || !annotated(b.msg.Kind) {
		return pass(b)
	}
	retried := len(b.route.Retry.Schedule) > 0 && partAttempts(b.fx[0], b.part) > 1
	if b.machine == nil && retried {
		b.machine = d.machines.get(b.fx[0].Key)
	}
	if b.machine == nil && !retried && !b.again && b.fx[0].PartsSent == 0 {
		mt, err := d.o.Model.Annotate(ctx, *b.msg, b.route.Translate)
		switch {
		case errors.Is(err, ErrNothingAsked):
		case err != nil:
			log := b.log(d)
			log.Info().Err(err).Msg("notice sent without the model's text")
		case mt.Summary != "" || mt.Translation != "":
			b.machine = &mt
			if len(b.route.Retry.Schedule) > 0 {
				d.machines.put(b.fx[0].Key, &mt)
			}
		}
	}
	if b.machine != nil {
		m := *b.msg
		m.Machine = b.machine
		b.msg = &m
	}
	return pass(b)
}

// annotated reports whether notices of kind get the model's text: a
// task's notices and digests, not inbound events, state notices or tests.
func annotated(kind string) bool {
	return kind == KindChanged || kind == KindDeadline || kind == KindDigest
}

// machineMemo keeps the model's text of pushes that may be retried, so a
// retry sends the body its first attempt sent. Bounded: when full it
// starts afresh, and a retry it forgot goes without the model's text.
type machineMemo struct {
	mu sync.Mutex
	m  map[string]*MachineText
}

// machineMemoMax bounds the remembered answers.
const machineMemoMax = 4096

func (c *machineMemo) get(key string) *MachineText {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *machineMemo) put(key string, mt *MachineText) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= machineMemoMax {
		c.m = make(map[string]*MachineText)
	}
	c.m[key] = mt
}
