package adversarial

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
)

// TestDupProducerWithoutLeaseTable: dupproducer --lease-table none (or
// empty, as an empty table means none for workman's --fleet-table) takes
// an in-memory lease and completes its run: no DynamoDB table of that
// name is looked for (the emulator has none, so using one would fail).
func TestDupProducerWithoutLeaseTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dp := testbin.Build(t, "dupproducer")["dupproducer"]
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	m.put("1", space, "a", "alpha content")
	for i, args := range [][]string{{"--lease-table", "none"}, {"--lease-table", ""}} {
		c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: dp, Args: append([]string{"--frequency", "0", "--progress", "off",
			"--state", filepath.Join(t.TempDir(), "state.json"), "--queue", queue.KeyDupLow}, args...), Env: m.env()})
		if c.Err() != nil || !strings.HasPrefix(c.Stdout(), "dupproducer: done") {
			t.Errorf("run %d %q: %v\n%s", i, args, c.Err(), c.Output())
		}
	}
	if n := m.depth(queue.KeyDupLow); n < 2 {
		t.Errorf("dup-low holds %d tasks, want each run's", n)
	}
}
