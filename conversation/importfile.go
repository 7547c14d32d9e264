package conversation

import (
	"context"

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
		en, zh := transfer.Refusal(err)
		if t.zh() {
			return []Reply{{Text: zh}}
		}
		return []Reply{{Text: en}}
	}
	return []Reply{{Text: transfer.Text(rows, t.zh())}}
}
