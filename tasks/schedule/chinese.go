package schedule

import (
	"strings"
	"time"
)

// This file holds every Chinese word the schedule grammar reads; the
// parser's messages are English, worded in Chinese by the conversation's
// catalogue from each ParseError's code.

// chineseOpener opens a Chinese schedule: "every".
const chineseOpener = "每"

// ideographicComma separates Chinese weekdays.
const ideographicComma = "、"

// chineseDayWords are the weekdays as Chinese schedules write them after
// 周 or 星期.
var chineseDayWords = map[string]time.Weekday{
	"一": time.Monday, "二": time.Tuesday, "三": time.Wednesday, "四": time.Thursday,
	"五": time.Friday, "六": time.Saturday, "日": time.Sunday, "天": time.Sunday, "七": time.Sunday,
}

// chineseUnitWords are interval units, longest first within a shared
// prefix.
var chineseUnitWords = []unitWord{
	{"分鐘", time.Minute}, {"分钟", time.Minute}, {"分", time.Minute},
	{"個小時", time.Hour}, {"个小时", time.Hour}, {"小時", time.Hour}, {"小时", time.Hour}, {"鐘頭", time.Hour}, {"钟头", time.Hour},
	{"天", 24 * time.Hour}, {"日", 24 * time.Hour},
	{"秒", time.Second},
	{"周", 7 * 24 * time.Hour}, {"週", 7 * 24 * time.Hour}, {"星期", 7 * 24 * time.Hour},
}

// chineseHalfHour is "half an hour" as one interval.
var chineseHalfHour = []string{"半小时", "半小時"}

// chinesePeriods are the parts of the day a clock time may follow, as in
// 早上8点 or 下午3点30分.
var chinesePeriods = []struct {
	word string
	pm   bool
	noon bool
}{
	{"凌晨", false, false}, {"早上", false, false}, {"早晨", false, false}, {"上午", false, false}, {"清晨", false, false},
	{"中午", false, true}, {"下午", true, false}, {"傍晚", true, false}, {"晚上", true, false}, {"夜里", true, false}, {"夜間", true, false},
}

// chineseHourWords end the hour of a clock time (8点, 20时); what follows
// is the minute, perhaps ending in a chineseMinuteEnds word, or
// chineseHalf (8点半).
var (
	chineseHourWords  = []string{"点", "點", "时", "時"}
	chineseMinuteEnds = []string{"分", "整"}
)

const chineseHalf = "半"

// chinese reads the forms people type in Chinese: 每天 08:00 [Zone],
// 每天早上8点, 每日 20:30, 每 30 分钟, 每隔2小时, 每小时, 每半小时.
func (p *parser) chinese() (Schedule, error) {
	rest := strings.TrimPrefix(p.text, chineseOpener)
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
				return nil, p.errc(len([]rune(p.text)), "zh_daily_needs_time", nil, "每天 needs a time, like 每天 08:00")
			}
			return p.daily(splitClock(after))
		}
	}
	if rest == "" {
		return nil, p.errc(len([]rune(p.text)), "zh_every_needs_interval", nil, "每 needs an interval, like 每 30 分钟 or 每 2 小时")
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
		return nil, p.errc(p.pos(rest), "zh_weekly_needs_day", nil, "%s", en)
	}
	clock := strings.TrimSpace(rest[i:])
	if clock == "" {
		return nil, p.errc(len([]rune(p.text)), "zh_weekly_needs_day", nil, "%s", en)
	}
	d, err := p.daily(splitClock(clock))
	if err != nil {
		return nil, err
	}
	return Weekly{Days: days, Daily: d.(Daily)}, nil
}
