package render

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/herald-bridge/herald/delivery"
)

// Feishu interactive card (message card v1) JSON shapes.
type card struct {
	Config   cardConfig    `json:"config"`
	Header   cardHeader    `json:"header"`
	Elements []cardElement `json:"elements"`
}

type cardConfig struct {
	WideScreenMode bool `json:"wide_screen_mode"`
	EnableForward  bool `json:"enable_forward"`
}

type cardHeader struct {
	Title    cardText `json:"title"`
	Template string   `json:"template,omitempty"`
}

type cardText struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

type cardElement struct {
	Tag      string      `json:"tag"`
	Text     *cardText   `json:"text,omitempty"`
	Extra    *cardButton `json:"extra,omitempty"`
	Elements []cardText  `json:"elements,omitempty"` // note
}

type cardButton struct {
	Tag  string   `json:"tag"`
	Text cardText `json:"text"`
	Type string   `json:"type"`
	URL  string   `json:"url"`
}

// FeishuCard renders m as the JSON of a Feishu interactive card: a header
// with the title, one element per item (at most delivery.MaxItems) with its
// link, due time and, for a changed item, what it was before, then "and N
// more". All text is plain_text, so user strings need no markdown escaping.
func FeishuCard(m delivery.Message, lang string, zone *time.Location, now time.Time) ([]byte, error) {
	v := prepare(m, lang, zone, now)
	c := card{
		Config:   cardConfig{WideScreenMode: true, EnableForward: true},
		Header:   cardHeader{Title: plain(v.title), Template: template(m.Kind)},
		Elements: []cardElement{},
	}
	if v.text != "" {
		t := plain(v.text)
		c.Elements = append(c.Elements, cardElement{Tag: "div", Text: &t})
	}
	for _, it := range v.items {
		s := it.title + it.was
		if it.change != "" {
			s = "[" + it.change + "] " + s
		}
		if it.due != "" {
			s += "\n" + it.due
		}
		for _, l := range it.under() {
			s += "\n" + l
		}
		t := plain(s)
		el := cardElement{Tag: "div", Text: &t}
		if safeLink(it.url) {
			el.Extra = &cardButton{Tag: "button", Text: plain(v.w.open), Type: "default", URL: it.url}
		}
		c.Elements = append(c.Elements, el)
	}
	if v.more > 0 {
		c.Elements = append(c.Elements, cardElement{Tag: "note", Elements: []cardText{plain(v.w.more(v.more))}})
	}
	for _, l := range v.machine {
		t := plain(l)
		c.Elements = append(c.Elements, cardElement{Tag: "div", Text: &t})
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("render feishu card: %w", err)
	}
	return b, nil
}

func plain(s string) cardText { return cardText{Tag: "plain_text", Content: s} }

func template(kind string) string {
	switch kind {
	case delivery.KindDeadline:
		return "orange"
	case delivery.KindChanged, delivery.KindDigest:
		return "blue"
	}
	return "grey"
}
