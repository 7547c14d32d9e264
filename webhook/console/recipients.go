package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/webhook"
)

// Recipients is what the console needs to show recipients, disabled or
// not, and to act on one (SPEC §21): the same operations as herald
// recipients list|enable and herald ledger redeliver --recipient.
type Recipients interface {
	List(ctx context.Context) ([]RecipientRow, error)
	// Enable turns a disabled recipient back on (admins only).
	Enable(ctx context.Context, who, name string) (RecipientRow, error)
	// Redeliver replays a recipient's ended pushes by range, or lists
	// them (dryRun) (admins only).
	Redeliver(ctx context.Context, who string, q delivery.Range, dryRun bool) (RangeResult, error)
}

// RecipientRow is one recipient as listed.
type RecipientRow struct {
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	State       string    `json:"state"` // enabled | disabled
	Reason      string    `json:"reason,omitempty"`
	DisabledAt  time.Time `json:"disabled_at,omitzero"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	Failures    int       `json:"failures"`
	LastError   string    `json:"last_error,omitempty"`
}

// RangeResult is what a range redelivery selected, and how many pushes
// it queued in all (the selected ones with the messages they were sent in).
type RangeResult struct {
	DryRun  bool          `json:"dry_run"`
	Effects []RangeEffect `json:"effects"`
	Queued  int           `json:"queued"`
}

// RangeEffect is one push a range selected.
type RangeEffect struct {
	Key       string    `json:"key"`
	Task      string    `json:"task"`
	State     string    `json:"state"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// recipientsView answers GET /console/api/recipients.
func (c *Console) recipientsView(w http.ResponseWriter, r *http.Request, _ Session) error {
	if c.o.Recipients == nil {
		return writeJSON(w, map[string]any{"ok": true, "recipients": []RecipientRow{}})
	}
	rows, err := c.o.Recipients.List(r.Context())
	if err != nil {
		return actionError(err)
	}
	out := make([]recipientItem, 0, len(rows))
	for _, row := range rows {
		it := recipientItem{RecipientRow: row, ID: recipientID(row.Name)}
		if delivery.IsLiteral(row.Name) { // an address: never shown (I10)
			it.Name = c.o.KindOf(row.Name) + " …" + it.ID[len(it.ID)-4:]
		}
		out = append(out, it)
	}
	return writeJSON(w, map[string]any{"ok": true, "recipients": out})
}

// recipientItem is a listed recipient as the page gets it: a configured
// name as it is, an address only as its kind and the end of an opaque
// id, which the page sends back to act on it.
type recipientItem struct {
	RecipientRow
	ID string `json:"id"`
}

// recipientID names a recipient to the page: its configured name, or for
// an address a digest of it.
func recipientID(name string) string {
	if !delivery.IsLiteral(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "addr_" + hex.EncodeToString(sum[:8])
}

// recipientNamed finds the recipient the page means by id.
func (c *Console) recipientNamed(ctx context.Context, id string) (string, error) {
	rows, err := c.o.Recipients.List(ctx)
	if err != nil {
		return "", err
	}
	for _, row := range rows {
		if recipientID(row.Name) == id {
			return row.Name, nil
		}
	}
	return "", &webhook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: "no such recipient"}
}

// recipientIn is the body of the recipient actions.
type recipientIn struct {
	Name string `json:"name"` // the id the list gave

	State  string    `json:"state"` // failed | unknown | "" (both)
	Since  time.Time `json:"since,omitzero"`
	Until  time.Time `json:"until,omitzero"`
	DryRun bool      `json:"dry_run"`
}

// recipientAction runs do on the body as the signed-in person.
func (c *Console) recipientAction(do func(ctx context.Context, who string, in recipientIn) (any, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, sess Session) error {
		if c.o.Recipients == nil {
			return &webhook.Error{Status: http.StatusNotFound, Code: "not_found", Msg: "no recipients here"}
		}
		var in recipientIn
		if err := readJSON(w, r, &in); err != nil {
			return err
		}
		name, err := c.recipientNamed(r.Context(), in.Name)
		if err != nil {
			return actionError(err)
		}
		in.Name = name
		res, err := do(r.Context(), sess.Principal, in)
		c.cache.drop()
		if row, ok := res.(RecipientRow); ok {
			res = recipientItem{RecipientRow: row, ID: recipientID(row.Name)}
			if delivery.IsLiteral(row.Name) {
				res = map[string]string{"id": recipientID(row.Name), "state": row.State}
			}
		}
		return act(w, res, err)
	}
}

func (c *Console) enableRecipient(ctx context.Context, who string, in recipientIn) (any, error) {
	return c.o.Recipients.Enable(ctx, who, in.Name)
}

func (c *Console) redeliverRecipient(ctx context.Context, who string, in recipientIn) (any, error) {
	q := delivery.Range{Recipient: in.Name, Since: in.Since, Until: in.Until}
	switch st := store.EffectState(in.State); st {
	case "":
	case store.Failed, store.Unknown:
		q.States = []store.EffectState{st}
	default:
		return nil, &webhook.Error{Status: http.StatusBadRequest, Code: "bad_request", Msg: "state is failed or unknown"}
	}
	return c.o.Recipients.Redeliver(ctx, who, q, in.DryRun)
}
