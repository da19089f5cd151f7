package lease_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

func TestMemory(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Harness {
		clk := clock.NewFake(time.Time{})
		return leasetest.Harness{Lease: lease.NewMemory(clk), Clock: clk}
	})
}
