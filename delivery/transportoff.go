package delivery

import (
	"context"
	"time"
)

// offRetry is how long pushes wait before looking again at a transport
// that is switched off.
const offRetry = time.Minute

// transportOff holds the pushes of a recipient whose transport is
// switched off (its token is not set, say): they wait durably for it to
// come back (a config reload), and are looked at again every offRetry.
func transportOff(ctx context.Context, d *Dispatcher, b *batch) []*batch {
	if b.off == nil {
		return pass(b)
	}
	log := b.log(d)
	until := b.now.Add(offRetry)
	d.each(len(b.fx), func(i int) {
		if _, err := d.o.Ledger.Defer(ctx, b.fx[i].Key, until, reasonTransportOff, b.now); err != nil {
			log.Warn().Err(err).Msg("cannot hold a push")
		}
	})
	log.Warn().Err(b.off).Msg("holding pushes while their transport is off")
	return nil
}
