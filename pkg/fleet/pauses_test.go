package fleet_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/task"
)

func TestParseTargetAndTargets(t *testing.T) {
	for arg, want := range map[string]fleet.Pause{
		"DUP":          {Kind: fleet.PauseType, Name: "DUP"},
		"NOOP":         {Kind: fleet.PauseType, Name: "NOOP"},
		"dup-low":      {Kind: fleet.PauseQueue, Name: "mill-dup-low"},
		"custom-queue": {Kind: fleet.PauseQueue, Name: "custom-queue"},
		"dup":          {Kind: fleet.PauseQueue, Name: "dup"},
	} {
		if got := fleet.ParseTarget("mill-", arg); got != want {
			t.Errorf("ParseTarget(%q) = %+v, want %+v", arg, got, want)
		}
	}
	ts := fleet.Targets("mill-")
	// Every task type (7 with STORAGE_STATS) and the six work queues.
	if len(ts) != 13 {
		t.Fatalf("%d targets, want 7 types and 6 work queues: %v", len(ts), ts)
	}
	if got := ts[len(task.Types)-1]; got != (fleet.Pause{Kind: fleet.PauseType, Name: string(task.TypeStorageStats)}) {
		t.Errorf("last type target %+v, want STORAGE_STATS", got)
	}
	for _, p := range ts {
		if p.Name == "mill-dead-letter" {
			t.Errorf("the dead-letter queue is a pause target")
		}
	}
}
