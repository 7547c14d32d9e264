package source

import (
	"strconv"

	"github.com/herald-bridge/herald/tasks/watch"
)

// candidate is an item whose identity may repeat within its document.
type candidate struct {
	item watch.Item
	// link and title (normalised) tell apart entries sharing an identity.
	link, title string
}

// separate gives every item a distinct identity. Documents reuse ids (a
// feed with one guid for every entry, a list whose entries share a link),
// and collapsing them would hide the entries after the first. An id that
// occurs once is kept. The entries sharing one are told apart by their
// link, else their title (id#link, id#title), and entries that are the
// same in all of these by their order among themselves (#2, #3 …): the
// distinguishing parts are not the content, so an edit stays a change of
// one identity, and a reordered feed keeps its identities. The shared id
// joins Alt, so a snapshot that knew the entry by it still matches.
func separate(cs []candidate) []watch.Item {
	count := make(map[string]int, len(cs))
	for _, c := range cs {
		count[c.item.ID]++
	}
	out := make([]watch.Item, 0, len(cs))
	used := make(map[string]int, len(cs))
	for _, c := range cs {
		it := c.item
		if count[it.ID] > 1 {
			shared := it.ID
			sub := c.link
			if sub == "" || sub == shared {
				sub = c.title
			}
			if sub != "" && sub != shared {
				it.ID = shared + "#" + sub
			}
			it.Alt = append([]string{shared}, it.Alt...)
		}
		if n := used[it.ID]; n > 0 {
			base := it.ID
			for {
				n++
				it.ID = base + "#" + strconv.Itoa(n)
				if used[it.ID] == 0 && count[it.ID] == 0 {
					break
				}
			}
			used[base] = n
		}
		used[it.ID]++
		it.Alt = alt(it.ID, it.Alt...)
		out = append(out, it)
	}
	return out
}
