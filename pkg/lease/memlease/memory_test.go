package memlease_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/lease/memlease"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

func TestMemory(t *testing.T) {
	leasetest.Run(t, leasetest.Harness{New: func(t *testing.T) leasetest.Fixture {
		clk := clock.NewFake(time.Time{})
		return leasetest.Fixture{Lease: memlease.New(clk), Clock: clk}
	}})
}
