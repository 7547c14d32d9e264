package perchat

import (
	"sync"
	"testing"
)

func TestTurnsOfOneChatRunInQueueOrder(t *testing.T) {
	var l Line[string]
	var (
		mu  sync.Mutex
		got []int
		wg  sync.WaitGroup
	)
	first := l.Lock("a") // hold the line so every turn below queues
	for i := range 50 {
		wait, ok := l.Queue("a", 0)
		if !ok {
			t.Fatal("unbounded queue refused")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := wait()
			defer done()
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		}()
	}
	other := l.Lock("b") // another chat does not wait
	other()
	first()
	wg.Wait()
	for i, v := range got {
		if v != i {
			t.Fatalf("turn %d ran as %d: %v", v, i, got)
		}
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d lines left after every turn ended", n)
	}
}

func TestQueueRefusesBeyondMaxWaiting(t *testing.T) {
	var l Line[int64]
	running := l.Lock(1)
	w1, ok1 := l.Queue(1, 2)
	w2, ok2 := l.Queue(1, 2)
	_, ok3 := l.Queue(1, 2)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("queue of 2: %v %v %v", ok1, ok2, ok3)
	}
	running()
	d1 := w1()
	if _, ok := l.Queue(1, 2); !ok { // one started: room again
		t.Fatal("a started turn still counted as waiting")
	}
	d1()
	w2()()
}
