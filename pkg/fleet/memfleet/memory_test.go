package memfleet_test

import (
	"github.com/millfleet/mill/pkg/fleet/memfleet"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet/fleettest"
)

func TestMemory(t *testing.T) {
	fleettest.Run(t, func(t *testing.T) fleettest.Harness {
		clk := clock.NewFake(time.Time{})
		return fleettest.Harness{Registry: memfleet.New(clk), Clock: clk}
	})
}
