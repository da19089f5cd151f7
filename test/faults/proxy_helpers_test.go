//go:build faults

package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/fleet"
)

// emulatorProxy is an HTTP fault proxy in front of the AWS emulator,
// closed when the test ends.
func emulatorProxy(t *testing.T) *faultproxy.HTTP { return testenv.EmulatorProxy(t) }

// degradedWithin polls the fleet registry for worker id's entry until it
// shows the state degraded with an outage (at most within), and returns
// the last entry seen, whether it did, and how long that took.
func degradedWithin(ctx context.Context, reg fleet.Registry, id string, within time.Duration) (fleet.Worker, bool, time.Duration) {
	start := time.Now()
	var seen fleet.Worker
	shown := testbin.Poll(within, 200*time.Millisecond, func() bool {
		seen = registryWorker(ctx, reg, id)
		return seen.State == fleet.StateDegraded && len(seen.Outages) > 0
	})
	return seen, shown, time.Since(start)
}

// registryWorker returns worker id's entry in the fleet registry (zero
// when it has none).
func registryWorker(ctx context.Context, reg fleet.Registry, id string) fleet.Worker {
	ws, _ := reg.Workers(ctx)
	for _, w := range ws {
		if w.ID == id {
			return w
		}
	}
	return fleet.Worker{}
}

// newBucket creates the bucket prefix-name on the emulator, removed when
// the test ends, and returns its name.
func newBucket(t *testing.T, ctx context.Context, s3c *s3.Client, prefix, name string) string {
	t.Helper()
	b := strings.TrimSuffix(prefix, "-") + "-" + name
	testenv.CleanupBucket(t, s3c, b)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	return b
}
