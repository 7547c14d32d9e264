package transfer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/herald-bridge/herald/tasks/bundle"
	"github.com/herald-bridge/herald/tasks/bundle/safezip"
	"github.com/herald-bridge/herald/tasks/opml"
)

// MaxFile is the largest file a person may send to import: the bundle
// limit on an archive, and the OPML reader's.
const MaxFile = 8 << 20

// Importable reports whether a file of this name may be a bundle or an
// OPML file: what people send in chat is looked at before it is fetched.
// A name without an extension is given the benefit of the doubt.
func Importable(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == "" || ext == ".zip" || ext == ".opml" || ext == ".xml" || ext == ".txt"
}

// Files imports the files people send in chat through a manager.
type Files struct{ M Manager }

// ImportFile decodes data (a bundle or an OPML file) and imports its
// tasks as r's requests; a file it refuses changes nothing.
func (f Files) ImportFile(ctx context.Context, r Request, data []byte) ([]Row, error) {
	list, err := Decode(data)
	if err != nil {
		return nil, err
	}
	return Import(ctx, f.M, r, list)
}

// Refusal says in plain words, in English and Chinese, why a file was
// not imported; nothing of it was.
func Refusal(err error) (en, zh string) {
	detail := err.Error()
	switch {
	case errors.Is(err, safezip.ErrRefused):
		_, why, _ := strings.Cut(detail, ": ")
		return "I refused that archive: " + why + ". Nothing was imported.", "这个压缩包被拒绝（" + why + "），没有导入任何内容。"
	case errors.Is(err, bundle.ErrNewerFormat):
		return "That bundle comes from a newer herald than this one; nothing was imported.", "这个任务包来自更新版本的 herald，这里无法读取；没有导入任何内容。"
	case errors.Is(err, safezip.ErrMalformed), errors.Is(err, bundle.ErrInvalid), errors.Is(err, opml.ErrInvalid):
		return "That is neither a herald bundle (.zip) nor an OPML feed list (.opml); nothing was imported.",
			"这既不是 herald 任务包（.zip），也不是 OPML 订阅列表（.opml）；没有导入任何内容。"
	}
	return "I could not import that file; nothing was imported.", "无法导入这个文件；没有导入任何内容。"
}

var stateZh = map[State]string{
	Imported: "已导入", NeedsConfiguration: "需要配置", Unsupported: "不支持", Duplicate: "已存在", Refused: "被拒绝",
}

// maxTextRows is how many rows a chat reply lists; the rest are counted.
const maxTextRows = 40

// Text is the import's table as a chat reply: a count, then one line per
// task with its state and why.
func Text(rows []Row, zh bool) string {
	var b strings.Builder
	n := 0
	for _, r := range rows {
		if r.State == Imported {
			n++
		}
	}
	if zh {
		fmt.Fprintf(&b, "导入了 %d 个任务（共 %d 个）：\n", n, len(rows))
	} else {
		fmt.Fprintf(&b, "Imported %d of %d task(s):\n", n, len(rows))
	}
	for i, r := range rows {
		if i == maxTextRows {
			if zh {
				fmt.Fprintf(&b, "……还有 %d 个\n", len(rows)-i)
			} else {
				fmt.Fprintf(&b, "… and %d more\n", len(rows)-i)
			}
			break
		}
		name := r.Name
		if name == "" {
			name = r.Source
		}
		state, detail := string(r.State), r.Detail
		if zh {
			state, detail = stateZh[r.State], r.DetailZh
		}
		if r.Task != "" {
			detail += " " + r.Task
		}
		if zh {
			fmt.Fprintf(&b, "• %s — %s（%s）\n", name, state, strings.TrimSpace(detail))
		} else {
			fmt.Fprintf(&b, "• %s — %s (%s)\n", name, state, strings.TrimSpace(detail))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
