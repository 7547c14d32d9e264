package delivery

import (
	"context"
	"errors"
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
func annotate(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if d.o.Model == nil || b.msg == nil || b.msg.Machine != nil || !annotated(b.msg.Kind) {
		return pass(b)
	}
	if b.machine == nil && !b.again && b.fx[0].PartsSent == 0 {
		mt, err := d.o.Model.Annotate(ctx, *b.msg, b.route.Translate)
		switch {
		case errors.Is(err, ErrNothingAsked):
		case err != nil:
			log := b.log(d)
			log.Info().Err(err).Msg("notice sent without the model's text")
		case mt.Summary != "" || mt.Translation != "":
			b.machine = &mt
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
