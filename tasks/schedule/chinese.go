package schedule

import "strings"

// chinese reads the forms people type in Chinese: 每天 08:00 [Zone],
// 每天早上8点, 每日 20:30, 每 30 分钟, 每隔2小时, 每小时, 每半小时.
func (p *parser) chinese() (Schedule, error) {
	rest := strings.TrimPrefix(p.text, "每")
	rest = strings.TrimPrefix(strings.TrimSpace(rest), "隔")
	rest = strings.TrimSpace(rest)
	for _, day := range []string{"天", "日"} {
		if after, ok := strings.CutPrefix(rest, day); ok {
			after = strings.TrimSpace(after)
			if after == "" {
				return nil, p.errf(len([]rune(p.text)), "每天 needs a time, like 每天 08:00")
			}
			return p.daily(splitClock(after))
		}
	}
	if rest == "" {
		return nil, p.errf(len([]rune(p.text)), "每 needs an interval, like 每 30 分钟 or 每 2 小时")
	}
	return p.every([]string{rest})
}

// splitClock separates a trailing zone from a Chinese clock text whose
// parts may be split by spaces ("早上 8 点 Asia/Shanghai").
func splitClock(s string) []string {
	f := strings.Fields(s)
	if len(f) > 1 && looksLikeZone(f[len(f)-1]) {
		return []string{strings.Join(f[:len(f)-1], ""), f[len(f)-1]}
	}
	return []string{strings.Join(f, "")}
}
