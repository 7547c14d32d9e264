package conversation

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herald-bridge/herald/store"
	"github.com/herald-bridge/herald/tasks"
)

// failed answers a turn that could not be carried out.
func (t *turn) failed(err error) []Reply {
	return []Reply{{Text: t.errText(err)}}
}

// errText is the chat text of an error: the manager's plain message
// (translated for Chinese chats), or a short generic one. It never shows
// internals, a URL's query, or a secret (I10).
func (t *turn) errText(err error) string {
	var ue *tasks.UserError
	if errors.As(err, &ue) {
		if t.zh() {
			return Redact(zhUserError(ue))
		}
		return Redact(sentence(ue.Msg))
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return t.tr("I can't find that; /tasks lists the ids.", "找不到它；发送 /tasks 查看编号。")
	case errors.Is(err, tasks.ErrForbidden):
		return t.tr("You are not allowed to do that.", "你没有权限这样做。")
	case errors.Is(err, tasks.ErrNotOwner), errors.Is(err, store.ErrUnavailable):
		return t.tr("I can't do that right now; try again in a minute.", "现在无法处理，请一分钟后再试。")
	}
	t.c.log.Error().Str("channel", t.m.Channel).Err(err).Msg("chat command failed")
	return t.tr("Something went wrong on my side; try again in a minute.", "出了点问题，请稍后再试。")
}

// sentence capitalises a message and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}

var (
	reApprove   = regexp.MustCompile(`/approve (r-[A-Za-z0-9._:-]+)`)
	reAlready   = regexp.MustCompile(`^request (\S+) is already (.+)$`)
	reTaskState = regexp.MustCompile(`^task (\S+) is (?:already )?([a-z _]+?)(?:, not \w+)?$`)
	reNoTask    = regexp.MustCompile(`^there is no task or request (\S+)$`)
	reURL       = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	reSecret    = regexp.MustCompile(`(?i)\b(hin_[0-9a-f]{8,}|whsec_[A-Za-z0-9+/=]{8,}|bearer\s+\S+|bot\d+:[A-Za-z0-9_-]{20,})`)
)

var stateWordsZh = map[string]string{
	"pending approval": "待批准", "active": "运行中", "paused": "已暂停", "error": "出错",
	"done": "已完成", "rejected": "已拒绝", "deleted": "已删除",
}

func zhState(s string) string {
	if z, ok := stateWordsZh[s]; ok {
		return z
	}
	return s
}

// zhUserError renders a manager message in Chinese: the known messages
// word by word, the rest by their kind.
func zhUserError(ue *tasks.UserError) string {
	msg := ue.Msg
	hint := ""
	if m := reApprove.FindStringSubmatch(msg); m != nil {
		hint = "管理员可以用 /approve " + m[1] + " 批准。"
	}
	if m := reNoTask.FindStringSubmatch(msg); m != nil {
		return "没有编号为 " + m[1] + " 的任务或申请；发送 /tasks 查看。"
	}
	if m := reAlready.FindStringSubmatch(msg); m != nil {
		return "申请 " + m[1] + " 已经是“" + zhState(m[2]) + "”状态。"
	}
	if m := reTaskState.FindStringSubmatch(msg); m != nil && errors.Is(ue, tasks.ErrState) {
		return "任务 " + m[1] + " 当前为“" + zhState(m[2]) + "”，不能这样做。"
	}
	switch {
	case strings.Contains(msg, "only an admin can approve"):
		return "只有管理员可以批准申请。"
	case strings.Contains(msg, "only an admin can reject"):
		return "只有管理员可以拒绝申请。"
	case strings.Contains(msg, "not allowed to request"):
		return "你没有申请关注的权限；请联系管理员。"
	case strings.Contains(msg, "only have pushes sent to this chat or your inbox"):
		return "只能推送到本聊天或你的收件箱。"
	case strings.Contains(msg, "owner or an admin"):
		return "只有任务的创建者或管理员可以这样做。"
	case strings.Contains(msg, "not a web address"):
		return "这不是可以关注的网址（必须以 http:// 或 https:// 开头）。"
	case strings.Contains(msg, "credentials out of the URL"):
		return "请不要把密码写在网址里。"
	case strings.Contains(msg, "schedule"):
		return "无法识别时间安排，例如 every 1h 或 daily 08:00。"
	case strings.Contains(msg, "does not own scheduling"):
		return "现在无法运行，请稍后再试。"
	}
	switch {
	case errors.Is(ue, tasks.ErrNotFound):
		return "找不到它；发送 /tasks 查看编号。"
	case errors.Is(ue, tasks.ErrForbidden):
		return "你没有权限这样做。"
	case errors.Is(ue, tasks.ErrScope):
		if hint == "" {
			hint = "需要管理员重新批准。"
		}
		return "超出了已批准的范围；" + hint
	case errors.Is(ue, tasks.ErrLimit):
		return "任务数量已达上限；请先删除一个任务。"
	case errors.Is(ue, tasks.ErrState):
		return "任务当前的状态不允许这样做。"
	case errors.Is(ue, tasks.ErrInvalid):
		return "请求无效：" + msg + "。"
	case errors.Is(ue, tasks.ErrNotOwner):
		return "现在无法运行，请稍后再试。"
	}
	return "无法完成：" + msg + "。"
}

// Redact removes what must not be shown in chat from a message: a URL's
// credentials, query and fragment, and anything shaped like a token.
func Redact(s string) string {
	s = reURL.ReplaceAllStringFunc(s, func(u string) string {
		trail := ""
		for u != "" && strings.ContainsAny(u[len(u)-1:], ".,;:)]") {
			trail = u[len(u)-1:] + trail
			u = u[:len(u)-1]
		}
		return ShowURL(u) + trail
	})
	return reSecret.ReplaceAllString(s, "[redacted]")
}
