package main

import (
	"strings"
	"testing"
	"unicode"
)

// hanOutside reports whether s has Chinese characters once the given
// names are taken out of it.
func hanOutside(s string, names ...string) bool {
	for _, n := range names {
		s = strings.ReplaceAll(s, n, "")
	}
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// TestLanguage_FollowsThePersonNotAName walks a console chat: an English
// /watch naming its task in Chinese is answered wholly in English; a
// Chinese /订阅 is answered in Chinese with its schedule worded in Chinese
// ("每 30 分钟", not "每 30m"); a bare /tasks then follows the language
// last used, and /lang en pins English over Chinese words.
func TestLanguage_FollowsThePersonNotAName(t *testing.T) {
	a, b := newFeed(t), newFeed(t)
	_, dataDir := startServe(t, adjustExample(t, freeAddr(t), nil))
	const name = "维护公告"

	out, errOut, code := chatCLI(t, dataDir, "admin", "/watch "+a.url()+" every 30m name \""+name+"\"\n")
	if code != 0 || !strings.Contains(out, "How often: every 30m") || hanOutside(out, name) {
		t.Fatalf("an English /watch with a Chinese name is not answered in English (exit %d):\n%s%s", code, out, errOut)
	}

	out, errOut, code = chatCLI(t, dataDir, "admin", "/订阅 "+b.url()+" 每 30 分钟\n")
	if code != 0 || !strings.Contains(out, "检查频率：每 30 分钟") || strings.Contains(out, "30m") {
		t.Fatalf("a Chinese /订阅 is not answered with a Chinese schedule (exit %d):\n%s%s", code, out, errOut)
	}

	out, _, _ = chatCLI(t, dataDir, "admin", "/tasks\n")
	if !hanOutside(out, name) {
		t.Errorf("a bare /tasks after Chinese is not answered in Chinese:\n%s", out)
	}

	out, _, _ = chatCLI(t, dataDir, "admin", "/lang en\n/订阅 "+a.url()+"x 每 2 小时\n")
	if !strings.Contains(out, "every 2h") || hanOutside(out) {
		t.Errorf("a pinned English is not followed over Chinese words:\n%s", out)
	}
}
