package dynamolease_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	table := testenv.Prefix(t) + "leases"
	testenv.CreateTable(t, c, dynamolease.CreateTableInput(table), dynamolease.TimeToLiveInput(table))
	leasetest.Run(t, leasetest.Harness{New: func(t *testing.T) leasetest.Fixture {
		clk := clock.NewFake(time.Time{})
		return leasetest.Fixture{Lease: dynamolease.New(c, table, clk), Clock: clk}
	}})
}
