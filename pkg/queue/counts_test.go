package queue

import (
	"sync"
	"testing"
)

func TestCountsZeroValueAndConcurrentAdds(t *testing.T) {
	var c Counts
	if got := c.Snapshot(); len(got) != 0 || c.Total() != 0 {
		t.Fatalf("zero value: %v, total %d", got, c.Total())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Add("ReceiveMessage", 1)
				c.Add("DeleteMessageBatch", 2)
			}
		})
	}
	wg.Wait()
	snap := c.Snapshot()
	if snap["ReceiveMessage"] != 800 || snap["DeleteMessageBatch"] != 1600 || c.Total() != 2400 {
		t.Fatalf("after 8×100 adds: %v, total %d", snap, c.Total())
	}
	snap["ReceiveMessage"] = 0 // a snapshot is a copy
	c.Reset()
	if c.Total() != 0 || c.Snapshot()["ReceiveMessage"] != 0 {
		t.Fatalf("after Reset: %v", c.Snapshot())
	}
}
