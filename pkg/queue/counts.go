package queue

import (
	"maps"
	"sync"
)

// Counts is a count per name — requests per SQS operation, as sqsqueue's
// Meter measures them on a client and memqueue estimates them. The zero
// value is ready; it is safe for concurrent use.
type Counts struct {
	mu sync.Mutex
	m  map[string]int64
}

// Add adds n to name's count.
func (c *Counts) Add(name string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[name] += n
}

// Snapshot returns the counts by name.
func (c *Counts) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return map[string]int64{}
	}
	return maps.Clone(c.m)
}

// Total returns the sum of the counts.
func (c *Counts) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.m {
		n += v
	}
	return n
}

// Reset sets every count to zero.
func (c *Counts) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
