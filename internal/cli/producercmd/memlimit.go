package producercmd

import (
	"runtime/debug"
)

// DefaultMemoryLimit is the soft limit of a producer's Go memory (heap,
// goroutine stacks, the runtime's own) when the environment sets no
// GOMEMLIMIT. Below it the collector paces itself as GOGC says (a
// producer's live heap is a few MiB and its peak under 25 MiB of Go
// memory up to 100,000 items of a space); near it the collector runs
// more often rather than let the heap double. The limit is soft: a live
// heap above it (a space listing that holds more than a page) is not
// refused, it costs collector CPU (the runtime caps that at about half of
// GOMAXPROCS), so the limit keeps a generous margin over the live heap.
const DefaultMemoryLimit = 40 << 20

// limitMemory sets the runtime's soft memory limit to DefaultMemoryLimit
// unless getenv has GOMEMLIMIT (which the runtime has applied already:
// "off" or any other value is the operator's).
func limitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}
