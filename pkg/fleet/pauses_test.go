package fleet_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/fleet"
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
	if len(ts) != 12 {
		t.Fatalf("%d targets, want 6 types and 6 work queues: %v", len(ts), ts)
	}
	for _, p := range ts {
		if p.Name == "mill-dead-letter" {
			t.Errorf("the dead-letter queue is a pause target")
		}
	}
}
