package conversation

import (
	"context"
	"strings"
	"testing"
)

// A Feishu admin talks to herald in a p2p chat (feishu:chat:<oc_id>), but
// herald reaches them at feishu:user:<open_id>, and a card action carries
// no language at all. A press is answered in the presser's pinned or
// last-used language, wherever the card sits, and the prompt carrying the
// buttons is already in it.
func TestPressAnswersInThePressersLanguage(t *testing.T) {
	const (
		fsAdmin = "feishu:ou_admin01"
		fsP2P   = "feishu:chat:oc_adminp2p"
		fsGroup = "feishu:chat:oc_group01"
		fsBob   = "feishu:ou_bob01"
	)
	for _, tc := range []struct {
		name     string
		own      string // what the admin says in their p2p chat first
		ownLang  string
		group    string // what someone else says in the group
		grpLang  string
		pressIn  string
		hint     string // the platform's language hint on the press
		toast    string
		approved string
	}{
		{"pinned Chinese, pressed in an English group", "/lang zh", "", "what are my tasks", "en", fsGroup, "", "已批准", "已由"},
		{"last used Chinese, pressed in an English group", "/任务", "", "what are my tasks", "en", fsGroup, "", "已批准", "已由"},
		{"last used Chinese, pressed in the p2p chat", "我的任务", "", "", "", fsP2P, "", "已批准", "已由"},
		{"pinned English, pressed in a Chinese group", "/lang en", "", "我的任务", "zh", fsGroup, "", "Approved", "Approved r-"},
		{"pinned Chinese beats an English hint", "/lang zh", "", "", "", fsGroup, "en", "已批准", "已由"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := defaultPolicy()
			p.Admins = append(p.Admins, fsAdmin)
			p.Requesters = append(p.Requesters, "feishu:*")
			r := newRig(t, p)
			r.startCore()
			ctx := context.Background()
			r.core.Handle(ctx, Message{Channel: "feishu", ID: "m-own", Principal: fsAdmin, Chat: fsP2P, Text: tc.own, Lang: tc.ownLang})
			if tc.group != "" {
				r.core.Handle(ctx, Message{Channel: "feishu", ID: "m-grp", Principal: fsBob, Chat: fsGroup, Group: true, Addressed: true, Text: tc.group, Lang: tc.grpLang})
			}
			rid := requestID(t, r.say(alice, "/watch https://example.org/feed.xml every 1h"))
			waitFor(t, func() bool { return len(r.out.to(ChatOf(fsAdmin))) > 0 })
			prompt := r.out.to(ChatOf(fsAdmin))[0]
			wantLabel := map[string]string{"已批准": "批准", "Approved": "Approve"}[tc.toast]
			if len(prompt.Buttons) != 2 || prompt.Buttons[0].Label != wantLabel {
				t.Errorf("prompt buttons %+v, want %q", prompt.Buttons, wantLabel)
			}
			out := r.core.Handle(ctx, Message{Channel: "feishu", ID: "ev-press", Principal: fsAdmin, Chat: tc.pressIn, Addressed: true, Lang: tc.hint,
				Button: &Press{Action: "approve", Arg: rid, Ref: "om_card"}})
			if len(out) == 0 || out[0].Toast != tc.toast || !strings.Contains(out[0].Text, tc.approved) {
				t.Fatalf("press answered %+v, want toast %q and %q", out, tc.toast, tc.approved)
			}
		})
	}
}
