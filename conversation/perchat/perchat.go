// Package perchat runs the turns of one chat one at a time, in the order
// they were queued: dialogs and approvals depend on the order people
// typed in. Different chats do not wait for each other.
package perchat

import "sync"

// Line orders work per key (a chat). The zero value is ready to use.
type Line[K comparable] struct {
	mu sync.Mutex
	m  map[K]*line
}

type line struct {
	refs    int           // turns queued or running
	waiting int           // turns queued, not yet started
	last    chan struct{} // closed when the last queued turn ends
}

// Queue takes the next place in key's line, in call order, and returns
// wait, which blocks until every earlier turn of key has ended and then
// returns done, to be called when this turn ends. With max > 0, Queue
// refuses (ok false) when max turns of key are already waiting to start.
func (l *Line[K]) Queue(key K, max int) (wait func() (done func()), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[K]*line{}
	}
	e := l.m[key]
	if e == nil {
		e = &line{}
		l.m[key] = e
	}
	if max > 0 && e.waiting >= max {
		return nil, false
	}
	prev, mine := e.last, make(chan struct{})
	e.last = mine
	e.refs++
	e.waiting++
	return func() func() {
		if prev != nil {
			<-prev
		}
		l.mu.Lock()
		e.waiting--
		l.mu.Unlock()
		return func() {
			close(mine)
			l.mu.Lock()
			if e.refs--; e.refs == 0 {
				delete(l.m, key)
			}
			l.mu.Unlock()
		}
	}, true
}

// Lock waits for key's earlier turns and returns the unlock of this one.
func (l *Line[K]) Lock(key K) (unlock func()) {
	wait, _ := l.Queue(key, 0)
	return wait()
}

// Len reports how many keys have turns queued or running.
func (l *Line[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
