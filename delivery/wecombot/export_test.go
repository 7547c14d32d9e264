package wecombot

import "github.com/herald-bridge/herald/delivery/robot"

// The sink's options under the names its tests use; the options are
// robot's.
type Option = robot.Option

var (
	WithEgress  = robot.WithEgress
	WithLogger  = robot.WithLogger
	WithClock   = robot.WithClock
	WithBuckets = robot.WithBuckets
)
