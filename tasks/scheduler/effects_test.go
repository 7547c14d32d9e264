package scheduler_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/herald-bridge/herald/delivery"
	"github.com/herald-bridge/herald/delivery/deliverytest"
	"github.com/herald-bridge/herald/tasks"
)

// A feed item retitled (and one whose due time moved) between two runs
// is claimed with a payload that says what it was, and the dispatcher
// hands that on to the sink; a new item's payload carries no was fields.
func TestChangedEffectCarriesWhatTheItemWas(t *testing.T) {
	r := newRig(t)
	r.own()
	tk := r.activeTask()
	due := t0.Add(72 * time.Hour)
	before := items("a", 3)
	before[2].Due = due
	r.src.Push(before, nil)
	if rec := r.run(tk.ID); rec.Outcome != tasks.OutcomeBaseline {
		t.Fatalf("first run outcome %q, want baseline", rec.Outcome)
	}

	after := items("a", 4)
	after[1].Title, after[1].Digest = "Exam — Room 204", "d-a-1-v2"
	after[2].Due, after[2].Digest = due.Add(48*time.Hour), "d-a-2-v2"
	r.src.Push(after, nil)
	if rec := r.run(tk.ID); rec.Changed != 2 || rec.New != 1 || rec.Effects != 3 {
		t.Fatalf("second run: changed=%d new=%d effects=%d, want 2, 1, 3", rec.Changed, rec.New, rec.Effects)
	}

	fxs, _ := r.effects(tk.ID)
	payloads := map[string]string{}
	for _, fx := range fxs {
		m := deliverytest.Message(t, fx)
		if len(m.Items) != 1 {
			t.Fatalf("effect lists %d items, want 1", len(m.Items))
		}
		payloads[m.Items[0].ID] = string(fx.Payload)
	}
	var retitled, moved struct {
		Items []struct {
			WasTitle *string `json:"was_title"`
			WasDue   *string `json:"was_due"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(payloads["a-1"]), &retitled); err != nil {
		t.Fatal(err)
	}
	if w := retitled.Items[0]; w.WasTitle == nil || *w.WasTitle != "Item a-1" || w.WasDue != nil {
		t.Errorf("retitled payload %s, want was_title \"Item a-1\" and no was_due", payloads["a-1"])
	}
	if err := json.Unmarshal([]byte(payloads["a-2"]), &moved); err != nil {
		t.Fatal(err)
	}
	if w := moved.Items[0]; w.WasDue == nil || w.WasTitle != nil {
		t.Errorf("moved payload %s, want was_due and no was_title", payloads["a-2"])
	}
	if p := payloads["a-3"]; p == "" || strings.Contains(p, `"was_`) {
		t.Errorf("new item's payload %q, want one without was fields", p)
	}

	sink := deliverytest.NewRecorder()
	r.dispatch(sink, "w1")
	got := map[string]delivery.Item{}
	for _, d := range sink.Sent() {
		for _, it := range d.Message.Items {
			got[it.ID] = it
		}
	}
	if it := got["a-1"]; it.Title != "Exam — Room 204" || it.WasTitle != "Item a-1" {
		t.Errorf("sent a-1 as %+v, want it retitled from \"Item a-1\"", it)
	}
	if it := got["a-2"]; !it.WasDue.Equal(due) || !it.Due.Equal(due.Add(48*time.Hour)) {
		t.Errorf("sent a-2 as %+v, want its due moved from %v", it, due)
	}
}
