package conversation

import (
	"context"
	"encoding/json"
	"github.com/herald-bridge/herald/conversation/text"
	"strings"
	"testing"
	"unicode"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/store"
)

// appendNotice puts a change notice with two linked items in p's inbox.
func (r *rig) appendNotice(p string) store.InboxItem {
	r.t.Helper()
	body, _ := json.Marshal(delivery.Message{Kind: delivery.KindChanged, TaskID: "t-abc123", TaskName: "Campus news", OccurredAt: t0,
		Items: []delivery.Item{
			{ID: "1", Title: "Library opens late", URL: "https://news.example.edu/library?id=7", Change: "new"},
			{ID: "2", Title: "Exam timetable", URL: "https://news.example.edu/exams", Change: "changed", WasTitle: "Exam dates"},
		}})
	it, err := r.store.Inbox().Append(context.Background(), store.InboxItem{Principal: p, EffectKey: "fx-" + p, Title: "2 changes in Campus news", Body: body, CreatedAt: t0}, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return it.Item
}

func TestInboxItemReadsInFullWithItemsAndLinks(t *testing.T) {
	for _, form := range []string{"/inbox %s", "/read %s", "/inbox %short", "/read %short"} {
		r := newRig(t, defaultPolicy())
		it := r.appendNotice(carol)
		text := strings.ReplaceAll(strings.ReplaceAll(form, "%short", strings.TrimLeft(it.ID, "0")), "%s", it.ID)
		got := r.say(carol, text)
		contains(t, got, shortID(it.ID)+"  ", "Campus news", "Library opens late", "https://news.example.edu/library?id=7",
			"Exam timetable", "https://news.example.edu/exams")
		if n, _ := r.store.Inbox().Unread(context.Background(), carol); n != 0 {
			t.Errorf("%s: the item is still unread", text)
		}
		contains(t, r.sayZh(carol, "/inbox "+it.ID), "Library opens late")
		contains(t, r.say(carol, "/read 99"), "There is no item 99 in your inbox")
		contains(t, r.say(alice, text), "no item") // another person's inbox is not theirs
	}
}

func TestLangPinsAChatAndAutoLiftsIt(t *testing.T) {
	r := newRig(t, defaultPolicy())
	ctx := context.Background()
	contains(t, r.sayRaw(carol, "/lang zh"), "本聊天之后的回复和通知都使用中文")
	contains(t, r.sayRaw(carol, "/tasks"), "你还没有任务")
	contains(t, r.say(carol, "/read all"), "没有未读消息") // English words and an English hint: still pinned
	if p, _ := r.core.o.Prefs.Get(ctx, ChatOf(carol)); p.Lang != "zh" {
		t.Errorf("notices do not follow the pin: prefs lang %q", p.Lang)
	}
	contains(t, r.sayRaw(carol, "/lang"), "固定使用中文")
	contains(t, r.sayRaw(carol, "/lang auto"), "each message in its own language")
	contains(t, r.sayRaw(carol, "/read all"), "Nothing was unread")
	contains(t, r.sayRaw(carol, "/任务"), "你还没有任务")
	if p, _ := r.core.o.Prefs.Get(ctx, ChatOf(carol)); p.Lang != "zh" {
		t.Errorf("notices do not follow the last-used language: prefs lang %q", p.Lang)
	}
	contains(t, r.sayRaw(carol, "/lang en"), "This chat now gets English")
	contains(t, r.sayRaw(carol, "/任务"), "You have no tasks")
	contains(t, r.sayRaw(carol, "/lang fr"), "/lang en, /lang zh or /lang auto")
}

// TestDecisionNoticeFollowsThePinnedLanguage: a request made in Chinese
// whose requester then pins English hears the decision in English.
func TestDecisionNoticeFollowsThePinnedLanguage(t *testing.T) {
	r := newRig(t, defaultPolicy())
	r.startCore()
	rid := requestID(t, r.sayZh(alice, "/watch https://example.org/feed.xml 每天 08:00"))
	contains(t, r.say(alice, "/lang en"), "English")
	contains(t, r.say(admin, "/approve "+rid), "Approved")
	waitFor(t, func() bool { return len(r.out.to(ChatOf(alice))) > 0 })
	contains(t, joinText(r.out.to(ChatOf(alice))), "Your request "+rid+" was approved")
}

func TestHelpListsEveryFormWithAnExampleInBothLanguages(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for lang, got := range map[string]string{"en": r.say(alice, "/help"), "zh": r.sayZh(alice, "/help")} {
		for _, want := range []string{map[string]string{"en": "every 30m", "zh": "每 30 分钟"}[lang], "at 2026-", "cron 0 9 * * 1-5", `selector "ul.notices > li"`, "/remind https://",
			"/inbox token", "/read 7", "/lang", "/mute t-", "/quiet 22:00-07:00", "/reject r-", "/cancel"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s help lacks %q", lang, want)
			}
		}
		for _, name := range commands {
			if name != "help" && !strings.Contains(got, "/"+name) {
				t.Errorf("%s help does not list /%s", lang, name)
			}
		}
		for _, l := range helpLines {
			if en := text.Format("en", l); strings.HasPrefix(en, "/watch") && (!text.English.Has(l+".example") || !text.Chinese.Has(l+".example")) {
				t.Errorf("%q has no example", en)
			}
		}
		han := strings.ContainsFunc(got, func(r rune) bool { return unicode.Is(unicode.Han, r) })
		if han != (lang == "zh") {
			t.Errorf("%s help is in the other language:\n%s", lang, got)
		}
	}
	contains(t, r.sayZh(alice, "/help"), "每周一 08:00", "每天 08:00")
	contains(t, r.say(alice, "/help"), "weekly mon 08:00", "daily 08:00")
}

// TestScheduleErrorsAreInOneLanguage: a Chinese reply has no English
// words from the schedule parser, an English one no Chinese.
func TestScheduleErrorsAreInOneLanguage(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for _, sched := range []string{"每 一", "每周 08:00", "每周一", "weekly 08:00", "every 10s", "daily 25:00", "daily 08:00 CST"} {
		zh := r.sayZh(alice, "/watch https://example.org/feed.xml "+sched)
		contains(t, zh, "时间安排无效")
		for _, w := range []string{"bad interval", "needs", "unknown", "must", "the time", "interval"} {
			if strings.Contains(zh, w) {
				t.Errorf("%s: the Chinese reply has English %q: %s", sched, w, zh)
			}
		}
	}
	for _, sched := range []string{"every x", "weekly 08:00", "weekly xyz 08:00", "every 10s", "daily 25:00", "daily 08:00 CST"} {
		en := r.say(alice, "/watch https://example.org/feed.xml "+sched)
		contains(t, en, "That schedule doesn't work")
		if strings.ContainsFunc(en, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s: the English reply has Chinese: %s", sched, en)
		}
	}
}

func TestWeeklyScheduleInChatInBothLanguages(t *testing.T) {
	r := newRig(t, defaultPolicy())
	got := r.sayZh(bob, "/watch https://news.example.edu/feed.xml 每周一 08:00")
	tk := r.task(requestID(t, got))
	if tk.Schedule != "weekly mon 08:00 UTC" {
		t.Errorf("每周一 08:00 became %q", tk.Schedule)
	}
	got = r.say(bob, "/watch https://news.example.edu/feed2.xml weekly fri 17:30")
	if tk := r.task(requestID(t, got)); tk.Schedule != "weekly fri 17:30 UTC" {
		t.Errorf("weekly fri 17:30 became %q", tk.Schedule)
	}
}

// TestHelpExamplesAreAccepted: every example /help gives parses as typed.
func TestHelpExamplesAreAccepted(t *testing.T) {
	for _, l := range helpLines {
		for _, c := range text.Catalogs() {
			if !c.Has(l + ".example") {
				continue
			}
			ex := c.Format(l + ".example")
			if _, err := Parse(ex, "herald_bot", nil); err != nil {
				t.Errorf("help example %q: %v", ex, err)
			}
		}
	}
}
