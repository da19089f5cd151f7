package workman_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// TestWithDefaultsZeroOnly: only zero fields take the defaults; a negative
// one is kept for validate to refuse (Workers) or to mean what the field
// says (GracePeriod).
func TestWithDefaultsZeroOnly(t *testing.T) {
	c := workman.Config{}.WithDefaults()
	if c.Workers != workman.DefaultWorkers || c.ReceiveWait != workman.DefaultReceiveWait || c.MaxAttempts != workman.DefaultMaxAttempts ||
		c.OperationAttempts != workman.DefaultOperationAttempts || c.ProbeMax != workman.DefaultProbeMax || c.DefaultTaskTimeout != workman.DefaultTaskTimeout {
		t.Errorf("zero config: %+v, want the defaults", c)
	}
	if c.WorkerID == "" || c.Clock == nil || c.Logger == nil || c.Observer == nil || c.ProcessorName == nil {
		t.Fatalf("zero config: a computed default is missing: %+v", c)
	}
	if got := c.ProcessorName(task.TypeBit); got != string(task.TypeBit) {
		t.Errorf("default ProcessorName(%s) = %q", task.TypeBit, got)
	}
	c = workman.Config{Workers: -1, GracePeriod: -time.Second, WorkerID: "w1"}.WithDefaults()
	if c.Workers != -1 || c.GracePeriod != -time.Second || c.WorkerID != "w1" {
		t.Errorf("set config: Workers %d, GracePeriod %v, WorkerID %q; want them kept", c.Workers, c.GracePeriod, c.WorkerID)
	}
}
