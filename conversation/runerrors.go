package conversation

import (
	"fmt"
	"regexp"
)

// The source's plain explanations of a refused address (tasks/source),
// which a Chinese reply gives in Chinese.
var (
	reRefusedAddr = regexp.MustCompile(`^blocked_address: (\S+) (is|resolves to) (a loopback address|a private network address|a link-local address|not a public address|an address that is not public); set policy\.allow_private_networks for local sources$`)
	reRefusedPort = regexp.MustCompile(`^blocked_address: port (\d+) of (\S+) is not allowed`)
	addrWordsZh   = map[string]string{
		"a loopback address": "回环地址", "a private network address": "私有网络地址", "a link-local address": "链路本地地址",
		"not a public address": "非公网地址", "an address that is not public": "非公网地址",
	}
)

// runError is a run's error for the reply: redacted, and in the reply's
// language where herald knows the words.
func (t *turn) runError(s string) string {
	s = Redact(s)
	if !t.zh() {
		return s
	}
	if m := reRefusedAddr.FindStringSubmatch(s); m != nil {
		verb := "是"
		if m[2] == "resolves to" {
			verb = "解析到"
		}
		return fmt.Sprintf("%s %s%s；本地来源需要设置 policy.allow_private_networks", m[1], verb, addrWordsZh[m[3]])
	}
	if m := reRefusedPort.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("%s 的端口 %s 不允许：来源只用 80 和 443 端口，除非设置 policy.allow_private_networks", m[2], m[1])
	}
	return s
}
