package wasmtest

import (
	"fmt"
	"strings"
)

// memMark is the pool's linear memory after a number of calls.
type memMark struct {
	calls int
	bytes uint64
}

// leakSlack is growth the leak check forgives: a collector's heap grows in steps.
const leakSlack = 1 << 20

// leakFinding decides what the leak check reports, from the memory marks taken every
// quarter of a run from the first call on, the number of calls of each of the two runs,
// and the failure that ended the calls early (nil when all ran). A heap that only grows
// makes each call slower (a collector scans all of it) and ends at the memory limit, so
// the failure a leak causes is a timeout or a memory limit, whatever the limits: when
// memory had grown by more than the slack before the failure, the leak is the finding
// and the failure its consequence. Without a failure, memory that grew in every quarter of
// the second run (a runtime's heap settles in the first) by more than the slack is a leak.
func leakFinding(unit string, marks []memMark, calls int, failedAt int, fail []string) []string {
	kib := func(b uint64) string { return fmt.Sprintf("%d KiB", b>>10) }
	if fail != nil {
		if len(marks) >= 2 && marks[len(marks)-1].bytes > marks[0].bytes+leakSlack {
			first, last := marks[0], marks[len(marks)-1]
			return append([]string{fmt.Sprintf("a leak: memory grew from %s to %s over %d %ss (%d to %d), then %s %d failed; something is kept from every call, and a heap that only grows makes every call slower until the time or memory limit ends it:",
				kib(first.bytes), kib(last.bytes), last.calls-first.calls, unit, first.calls, last.calls, unit, failedAt)}, fail...)
		}
		return fail
	}
	var second []memMark
	for _, m := range marks {
		if m.calls >= calls {
			second = append(second, m)
		}
	}
	if len(second) < 4 {
		return nil
	}
	for i := 1; i < len(second); i++ {
		if second[i].bytes <= second[i-1].bytes {
			return nil
		}
	}
	first, last := second[0], second[len(second)-1]
	if last.bytes <= first.bytes+leakSlack {
		return nil
	}
	steps := make([]string, len(second))
	for i, m := range second {
		steps[i] = kib(m.bytes)
	}
	return []string{fmt.Sprintf("a leak: memory grew from %s to %s over %d %ss, in every quarter of the second %d (%s): something is kept from every call, and a heap that only grows reaches the memory limit",
		kib(first.bytes), kib(last.bytes), last.calls-first.calls, unit, calls, strings.Join(steps, ", "))}
}
