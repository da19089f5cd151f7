package testbin

import (
	"testing"
	"time"
)

// Interval is how often WaitFor checks its condition.
const Interval = 250 * time.Millisecond

// WaitFor checks ok every Interval until it holds; it fails the test with
// what when d passes first.
func WaitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	if !Poll(d, Interval, ok) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Poll checks cond every interval until it holds (true) or d passes
// (false); cond is checked once more at the deadline.
func Poll(d, interval time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(interval) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
