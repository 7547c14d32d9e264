package scheduler

import (
	"testing"

	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/watch"
)

// TestI7_OneRunAtATimePerSignIn: the source session that takes one run
// at a time is the host with its credential, a sign-in included: two
// watches signing in as one person share it, two people do not.
func TestI7_OneRunAtATimePerSignIn(t *testing.T) {
	login := func(user string) *watch.SignIn {
		return &watch.SignIn{Login: &watch.Login{URL: "https://cas.example.edu/login", Form: map[string]string{"username": user, "password": "pw"}}}
	}
	task := func(path string, a *watch.SignIn) *tasks.Task {
		return &tasks.Task{Source: watch.Spec{URL: "https://portal.example.edu" + path, Auth: a}}
	}
	for _, c := range []struct {
		name string
		a, b *tasks.Task
		same bool
	}{
		{"one person, two pages", task("/notices", login("s1")), task("/exams", login("s1")), true},
		{"two people", task("/notices", login("s1")), task("/notices", login("s2")), false},
		{"signed in and not", task("/notices", login("s1")), task("/notices", nil), false},
		{"two cookies", task("/n", &watch.SignIn{Cookie: "a=1"}), task("/n", &watch.SignIn{Cookie: "a=2"}), false},
	} {
		if got := sessionKey(c.a) == sessionKey(c.b); got != c.same {
			t.Errorf("%s: same session = %v, want %v", c.name, got, c.same)
		}
	}
}
