package memlease_test

import (
	"github.com/millfleet/mill/pkg/lease/memlease"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

func TestMemory(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Harness {
		clk := clock.NewFake(time.Time{})
		return leasetest.Harness{Lease: memlease.New(clk), Clock: clk}
	})
}
