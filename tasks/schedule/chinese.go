package schedule

import "strings"

// chinese reads the forms people type in Chinese: 每天 08:00 [Zone],
// 每天早上8点, 每日 20:30, 每 30 分钟, 每隔2小时, 每小时, 每半小时.
func (p *parser) chinese() (Schedule, error) {
	rest := strings.TrimPrefix(p.text, "每")
	rest = strings.TrimPrefix(strings.TrimSpace(rest), "隔")
	rest = strings.TrimSpace(rest)
	for _, week := range []string{"周", "週", "星期", "礼拜", "禮拜"} {
		if after, ok := strings.CutPrefix(rest, week); ok {
			return p.chineseWeekly(strings.TrimSpace(after))
		}
	}
	for _, day := range []string{"天", "日"} {
		if after, ok := strings.CutPrefix(rest, day); ok {
			after = strings.TrimSpace(after)
			if after == "" {
				return nil, p.errz(len([]rune(p.text)), "每天后面需要时间，例如 每天 08:00", "每天 needs a time, like 每天 08:00")
			}
			return p.daily(splitClock(after))
		}
	}
	if rest == "" {
		return nil, p.errz(len([]rune(p.text)), "“每”后面需要间隔，例如 每 30 分钟 或 每 2 小时", "每 needs an interval, like 每 30 分钟 or 每 2 小时")
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

// chineseWeekly reads what follows 每周: 一 08:00, 一、四 18:30, 五下午3点.
func (p *parser) chineseWeekly(rest string) (Schedule, error) {
	const zh = "每周后面需要星期和时间，例如 每周一 08:00 或 每周一、四 18:30"
	const en = "每周 needs a day and a time, like 每周一 08:00"
	i := 0
	for _, r := range rest {
		if _, ok := dayWords[string(r)]; !ok && r != '、' && r != ',' {
			break
		}
		i += len(string(r))
	}
	days, ok := parseDays(rest[:i])
	if !ok {
		return nil, p.errz(p.pos(rest), zh, "%s", en)
	}
	clock := strings.TrimSpace(rest[i:])
	if clock == "" {
		return nil, p.errz(len([]rune(p.text)), zh, "%s", en)
	}
	d, err := p.daily(splitClock(clock))
	if err != nil {
		return nil, err
	}
	return Weekly{Days: days, Daily: d.(Daily)}, nil
}
