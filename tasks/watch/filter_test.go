package watch

import "testing"

func TestFilterAllows(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		title, url       string
		want             bool
	}{
		{"no keywords", nil, nil, "Anything", "", true},
		{"include in title", []string{"exam"}, nil, "Final EXAM", "", true},
		{"include missing", []string{"exam"}, nil, "Office hours", "", false},
		{"include in path", []string{"cs101"}, nil, "Hours", "https://lms.example.edu/CS101/hours", true},
		{"include in query", []string{"course=7"}, nil, "Hours", "https://lms.example.edu/view?course=7", true},
		{"host is not matched", []string{"exam"}, nil, "Hours", "https://lms.example.edu/hours", false},
		{"relative URL", []string{"exam"}, nil, "Hours", "/exams/hours", true},
		{"exclude", nil, []string{"sports"}, "Sports day", "", false},
		{"exclude in path", nil, []string{"/sports/"}, "Day", "https://news.example.edu/sports/day", false},
		{"exclude wins", []string{"exam"}, []string{"cancelled"}, "Exam cancelled", "", false},
		{"any include", []string{"quiz", "exam"}, nil, "Quiz 3", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := newFilter(tc.include, tc.exclude).allows(tc.title, tc.url); got != tc.want {
				t.Fatalf("allows = %v, want %v", got, tc.want)
			}
		})
	}
}
