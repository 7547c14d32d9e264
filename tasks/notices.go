package tasks

import (
	"context"

	"github.com/herald-bridge/herald/delivery/address"
	"github.com/herald-bridge/herald/delivery/chatprefs"
	"github.com/herald-bridge/herald/delivery/render"
	"github.com/herald-bridge/herald/store"
)

// Notices herald sends task owners, worded by the render layer's
// phrasebooks (render.OwnerNotice) in every language it speaks. They
// follow the owner's language where the owner talks to herald: the chat's
// pinned (/lang en|zh) or last-used language, kept in that chat's prefs;
// the task's Lang (the language it was requested in) only when the owner
// has not talked there since.
type Notice int

const (
	NoticeBaseline Notice = iota
	NoticeSuspect
	NoticeFailing
	NoticeRecovered
	NoticeUnreachable
	NoticeWatchingMany
)

// noticeNames are the phrasebooks' names of the notices.
var noticeNames = map[Notice]string{
	NoticeBaseline:     render.NoticeBaseline,
	NoticeWatchingMany: render.NoticeWatchingMany,
	NoticeSuspect:      render.NoticeSuspect,
	NoticeFailing:      render.NoticeFailing,
	NoticeRecovered:    render.NoticeRecovered,
	NoticeUnreachable:  render.NoticeUnreachable,
}

// Say returns a notice's title and text in the owner's language.
func Say(ctx context.Context, st store.Store, t *Task, n Notice, args ...any) (title, text string) {
	return NoticeIn(n, OwnerLang(ctx, st, t), args...)
}

// NoticeIn is a notice's title and text in lang over args (English for a
// language herald does not speak), worded for a count of one where the
// language says so ("1 item").
func NoticeIn(n Notice, lang string, args ...any) (title, text string) {
	return render.FormatNotice(lang, noticeNames[n], args...)
}

// NoticeText is a notice's title and format in lang (English for a
// language herald does not speak).
func NoticeText(n Notice, lang string) (title, format string) {
	return render.OwnerNotice(lang, noticeNames[n])
}

// OwnerLang is the language the owner last used (or pinned) where the
// notice goes, else in the chat the request came from, else in the
// owner's private chat; else the task's own language.
func OwnerLang(ctx context.Context, st store.Store, t *Task) string {
	prefs := chatprefs.Store{KV: st.Channels()}
	for _, chat := range []string{t.OwnerAddress(), t.ReplyTo, address.ChatOf(t.Owner)} {
		if chat == "" {
			continue
		}
		if p, err := prefs.Get(ctx, chat); err == nil && render.Speaks(p.Lang) {
			return p.Lang
		}
	}
	return t.Lang
}
