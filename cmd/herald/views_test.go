package main

import (
	"encoding/json"
	"testing"

	"github.com/herald-bridge/herald/tasks"
)

// TestTasksListJSON_FailedSaysWhy: a task whose last run failed is listed
// with the failure's class beside the outcome; other outcomes carry none.
func TestTasksListJSON_FailedSaysWhy(t *testing.T) {
	for _, tt := range []struct {
		task  tasks.Task
		class string
	}{
		{tasks.Task{ID: "t-1", State: tasks.Active, LastOutcome: tasks.OutcomeFailed, LastError: "auth"}, "auth"},
		{tasks.Task{ID: "t-2", State: tasks.Active, LastOutcome: tasks.OutcomeFailed, LastError: "schema"}, "schema"},
		{tasks.Task{ID: "t-3", State: tasks.Active, LastOutcome: "ok"}, ""},
	} {
		b, err := json.Marshal(viewTask(&tt.task))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got["last_outcome"] != tt.task.LastOutcome {
			t.Errorf("%s: last_outcome %v, want %q", tt.task.ID, got["last_outcome"], tt.task.LastOutcome)
		}
		c, present := got["class"]
		switch {
		case tt.class == "" && present:
			t.Errorf("%s: class %v on a run that did not fail", tt.task.ID, c)
		case tt.class != "" && c != tt.class:
			t.Errorf("%s: class %v, want %q (%s)", tt.task.ID, c, tt.class, b)
		}
	}
}
