package conversation

import (
	"context"
	"testing"
)

// TestPrivateSourcesAreRefusedWhenAsked: with private networks off (the
// default policy), a /watch or /remind of a loopback or private address
// is refused at once, in the words its first run would have failed with,
// in the person's language — not approved and left to fail.
func TestPrivateSourcesAreRefusedWhenAsked(t *testing.T) {
	r := newRig(t, defaultPolicy())
	for text, want := range map[string]string{
		"/watch http://127.0.0.1:8080/feed.xml every 1h": "127.0.0.1 is a loopback address; set policy.allow_private_networks for local sources",
		"/remind https://10.0.0.5/cal.ics":               "10.0.0.5 is a private network address; set policy.allow_private_networks for local sources",
		"/watch https://[::1]/feed.xml":                  "::1 is a loopback address; set policy.allow_private_networks for local sources",
	} {
		got := r.say(admin, text)
		contains(t, got, want)
		excludes(t, got, "approved", "t-")
	}
	contains(t, r.sayZh(alice, "/订阅 http://localhost/feed.xml"), "localhost 是回环地址；本地来源需要设置 policy.allow_private_networks")
	contains(t, r.say(alice, "/watch https://192.168.1.1:8443/feed.xml"), "192.168.1.1 is a private network address")
	if list, _ := r.m.List(context.Background(), admin); len(list) != 0 {
		t.Fatalf("refused sources made %d tasks", len(list))
	}
	if list, _ := r.m.List(context.Background(), alice); len(list) != 0 {
		t.Fatalf("refused sources made %d tasks", len(list))
	}

	p := defaultPolicy()
	p.AllowPrivate = true
	r = newRig(t, p)
	contains(t, r.say(admin, "/watch http://127.0.0.1:8080/feed.xml every 1h"), "t-")
	contains(t, r.say(admin, "/watch http://169.254.169.254/latest/meta-data/"), "169.254.169.254 is a cloud metadata address")
	contains(t, r.sayZh(admin, "/订阅 https://[fd00:ec2::254]/x"), "fd00:ec2::254 是云服务的元数据地址")
}
