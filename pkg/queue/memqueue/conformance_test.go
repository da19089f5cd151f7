package memqueue_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/queue/queuetest"
)

// conformanceQueue makes a fresh queue on a fake clock for the suite.
func conformanceQueue(t *testing.T, o queuetest.Options) queuetest.Fixture {
	return newConformanceQueue(t, o, false)
}

func newConformanceQueue(t *testing.T, o queuetest.Options, fair bool) queuetest.Fixture {
	fc := clock.NewFake(time.Time{})
	cfg := memqueue.Config{VisibilityTimeout: o.VisibilityTimeout, Clock: fc, Fair: fair}
	var f queuetest.Fixture
	if o.MaxReceiveCount > 0 {
		dlq := memqueue.New("dead-letter", memqueue.Config{Clock: fc})
		cfg.DeadLetter, cfg.MaxReceiveCount = dlq, o.MaxReceiveCount
		f.DeadLetter = dlq
	}
	if cfg.VisibilityTimeout == 0 {
		cfg.VisibilityTimeout = 30 * time.Second
	}
	f.Queue = memqueue.New(t.Name(), cfg)
	f.Advance = fc.Advance
	return f
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, queuetest.Harness{New: conformanceQueue, FakeTime: true, Visibility: 30 * time.Second})
}

// TestConformanceFair: a Fair queue changes only the order of delivery, so
// it meets the whole contract too.
func TestConformanceFair(t *testing.T) {
	queuetest.Run(t, queuetest.Harness{New: func(t *testing.T, o queuetest.Options) queuetest.Fixture {
		return newConformanceQueue(t, o, true)
	}, FakeTime: true, Visibility: 30 * time.Second})
}
