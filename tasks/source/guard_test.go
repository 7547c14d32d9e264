package source_test

import (
	"github.com/herald-bridge/herald/tasks"
	"github.com/herald-bridge/herald/tasks/source"
)

// Source is what the task manager fetches from.
var _ tasks.Source = (*source.Source)(nil)
