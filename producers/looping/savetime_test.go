package looping_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/producers/looping"
)

// slowSaves is a state store whose saves take d, as an S3 one's do while
// the SDK retries a broken answer through its backoff (five attempts,
// backoff up to 5 s).
type slowSaves struct {
	looping.StateStore
	d time.Duration
}

func (s slowSaves) Save(ctx context.Context, st *looping.State) error {
	select {
	case <-time.After(s.d):
		return s.StateStore.Save(ctx, st)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSaveOutlastsTheSDKsRetries: a save gets the time the SDK's retries
// of its requests can take. With the lease release's 10 s, a state store
// whose listing the SDK was still retrying failed the invocation before
// its run started (test/faults TestBrokenBodies, 30 % of GET bodies
// broken).
func TestSaveOutlastsTheSDKsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		cfg := e.config(t, newFake([]string{"A"}, map[string]int{"A": 10}, nil))
		cfg.State = slowSaves{StateStore: e.state, d: 15 * time.Second}
		sum, err := mustNew(t, cfg).Run(context.Background())
		if err != nil || sum.Stopped != looping.StopDone || e.q.Len() != 10 {
			t.Fatalf("Run = %v, %v (queue %d); want the run done with saves of 15 s", sum, err, e.q.Len())
		}
	})
}
