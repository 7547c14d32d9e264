package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/herald-bridge/herald/tasks/scheduler"
)

// shardLine is `herald status`'s line on the scheduling shards: this
// replica's, then how many each replica owns as this one last saw.
func shardLine(sh *scheduler.ShardStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d here", len(sh.Mine), sh.Shards)
	if len(sh.Mine) > 0 {
		nums := make([]string, len(sh.Mine))
		for i, n := range sh.Mine {
			nums[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(nums, " "))
	}
	if len(sh.Owners) > 0 {
		names := make([]string, 0, len(sh.Owners))
		for name := range sh.Owners {
			names = append(names, name)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = fmt.Sprintf("%s %d", name, sh.Owners[name])
		}
		fmt.Fprintf(&b, "; per replica: %s", strings.Join(parts, ", "))
	}
	if sh.Live > 0 {
		fmt.Fprintf(&b, "; %d live replica(s)", sh.Live)
	}
	return b.String()
}

// shardOwners is /readyz's word on who schedules when scheduling is divided.
func shardOwners(sh scheduler.ShardStatus) string {
	held := 0
	for _, n := range sh.Owners {
		held += n
	}
	if len(sh.Mine) > 0 {
		return fmt.Sprintf("this replica for %d of %d shards; %d owned in all", len(sh.Mine), sh.Shards, held)
	}
	return fmt.Sprintf("other replicas (%d of %d shards owned)", held, sh.Shards)
}

// shardsOwned is herald_scheduler_shards_owned, read when scraped.
func (s *service) shardsOwned() float64 {
	if s.engine == nil {
		return 0
	}
	return float64(len(s.engine.Scheduler.Shards().Mine))
}
