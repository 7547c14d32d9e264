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
		return t.reply("I cannot import files here.", "这里不能导入文件。")
	}
	if !transfer.Importable(f.Name) {
		return t.reply("I can import a herald bundle (.zip) or an OPML feed list (.opml); that file is neither.",
			"我可以导入 herald 任务包（.zip）或 OPML 订阅列表（.opml）；这个文件都不是。")
	}
	if f.Size > transfer.MaxFile {
		return t.reply("That file is larger than 8 MiB; nothing was imported.", "文件超过 8 MiB，没有导入任何内容。")
	}
	data, err := f.Fetch(t.ctx, transfer.MaxFile)
	if err != nil {
		t.c.log.Warn().Str("channel", t.m.Channel).Err(err).Msg("file download for an import failed")
		return t.reply("I could not download that file; please send it again.", "无法下载这个文件，请重新发送。")
	}
	rows, err := imp.ImportFile(t.ctx, transfer.Request{Principal: t.m.Principal, By: clipName(t.m.Name), ReplyTo: t.replyTo(), Lang: t.lang}, data)
	if err != nil {
		en, zh := transfer.Refusal(err)
		return t.reply(en, zh)
	}
	return []Reply{{Text: transfer.Text(rows, t.zh())}}
}
