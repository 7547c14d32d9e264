package tasks

import (
	"context"

	"github.com/herald-bridge/herald/store"
)

// Which tasks are this replica's to schedule is decided here and nowhere
// else: the loop plans only tasks that are mine, a run starts under its
// task's runContext and commits under its fenceFor (I5). With one
// scheduling lease every task is this replica's while it holds the lease,
// under the one fence.

// mine reports whether this replica schedules task id now.
func (m *Manager) mine(id string) bool { return m.runContext(id) != nil }

// runContext is the context runs of task id start under, nil while this
// replica does not own it.
func (m *Manager) runContext(string) context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ownerCtx
}

// fenceFor is the fence a commit for task id carries (zero: not the owner).
func (m *Manager) fenceFor(string) store.Fence {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fence
}

// replanDue reports, once, that the loop must plan every task again
// because the set of tasks this replica owns changed.
func (m *Manager) replanDue() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	due := m.replanAll
	m.replanAll = false
	return due
}
