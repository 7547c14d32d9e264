package download

import (
	"strings"

	"github.com/herald-bridge/herald/delivery"
)

// AddressKind is the transport of a download recipient, as metrics name it.
const AddressKind delivery.AddressKind = "download"

// Router routes a task's downloads (Recipient) to the Sink and every
// other recipient through Next. A download recipient is not an address a
// person or a config can name: it resolves only here.
type Router struct {
	Next delivery.Router
	Sink *Sink
}

var _ delivery.Router = Router{}

// Resolve implements delivery.Router.
func (r Router) Resolve(recipient string) (delivery.Route, error) {
	if id, ok := strings.CutPrefix(recipient, recipientPrefix); ok && r.Sink != nil {
		// Written under the data dir of the replica that schedules the
		// task: only that one delivers it.
		return delivery.Route{Sink: r.Sink, To: delivery.Address{Kind: AddressKind, ID: id}, Lang: "en", Dedups: true, OwnerOnly: true}, nil
	}
	return r.Next.Resolve(recipient)
}
