package conversation

import (
	"context"
	"strings"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks/transfer"
)

// Importer imports the tasks of a file a person sent as their requests
// (transfer.Files).
type Importer interface {
	ImportFile(ctx context.Context, r transfer.Request, data []byte) ([]transfer.Row, error)
}

// importFile imports a bundle or an OPML file sent in a private chat:
// each task becomes the sender's request, decided by the policy as a
// /watch would be, and the answer is the table of what became of each.
func (t *turn) importFile(f File) []Reply {
	if t.m.Group {
		return nil
	}
	imp := t.c.o.Importer
	if imp == nil || f.Fetch == nil {
		return t.reply("importfile.i_cannot_import_files")
	}
	if !transfer.Importable(f.Name) {
		return t.reply("importfile.i_can_import_herald")
	}
	if f.Size > transfer.MaxFile {
		return t.reply("importfile.that_file_is_larger")
	}
	data, err := f.Fetch(t.ctx, transfer.MaxFile)
	if err != nil {
		t.c.log.Warn().Str("channel", t.m.Channel).Err(err).Msg("file download for an import failed")
		return t.reply("importfile.i_could_not_download")
	}
	rows, err := imp.ImportFile(t.ctx, transfer.Request{Principal: t.m.Principal, By: clipName(t.m.Name), ReplyTo: t.replyTo(), Lang: t.lang}, data)
	if err != nil {
		msg, _ := text.Error(t.lang, transfer.Refusal(err))
		return []Reply{{Text: msg}}
	}
	return []Reply{{Text: importText(t.lang, rows)}}
}

// maxImportRows is how many rows an import's reply lists; the rest are
// counted.
const maxImportRows = 40

// importText is an import's table as a chat reply in lang: a count, then
// one line per task with its state and why.
func importText(lang string, rows []transfer.Row) string {
	var b strings.Builder
	n := 0
	for _, r := range rows {
		if r.State == transfer.Imported {
			n++
		}
	}
	b.WriteString(text.Format(lang, "importfile.imported_of", n, len(rows)))
	for i, r := range rows {
		if i == maxImportRows {
			b.WriteString(text.Format(lang, "list.and_more", len(rows)-i))
			break
		}
		name := r.Name
		if name == "" {
			name = r.Source
		}
		state := string(r.State)
		if k := "transfer_state." + state; text.Of(lang).Has(k) {
			state = text.Format(lang, k)
		}
		detail := r.Detail
		if msg, ok := text.Error(lang, r.Why); ok {
			detail = strings.TrimRight(msg, ideographicFullStop) // shown in brackets: no full stop
		}
		if r.Task != "" {
			detail += " " + r.Task
		}
		b.WriteString(text.Format(lang, "importfile.row", name, state, strings.TrimSpace(detail)))
	}
	return strings.TrimRight(b.String(), "\n")
}
