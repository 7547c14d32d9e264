package source

import "github.com/herald-bridge/herald/tasks"

// Source is what the task manager fetches from.
var _ tasks.Source = (*Source)(nil)
