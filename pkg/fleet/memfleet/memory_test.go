package memfleet_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/fleet/memfleet"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet/fleettest"
)

func TestMemory(t *testing.T) {
	fleettest.Run(t, fleettest.Harness{New: func(t *testing.T) fleettest.Fixture {
		clk := clock.NewFake(time.Time{})
		return fleettest.Fixture{Registry: memfleet.New(clk), Clock: clk}
	}})
}
