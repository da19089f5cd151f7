package dynamolease_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	table := testenv.Prefix(t) + "leases"
	testenv.CreateTable(t, c, dynamolease.CreateTableInput(table), dynamolease.TimeToLiveInput(table))
	leasetest.Run(t, func(t *testing.T) leasetest.Harness {
		clk := clock.NewFake(time.Time{})
		return leasetest.Harness{Lease: dynamolease.New(c, table, clk), Clock: clk}
	})
}
