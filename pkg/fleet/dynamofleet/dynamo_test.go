package dynamofleet_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/fleet/fleettest"
)

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	prefix := testenv.Prefix(t)
	var n atomic.Int64
	fleettest.Run(t, fleettest.Harness{New: func(t *testing.T) fleettest.Fixture {
		// Listing reads the whole table: one table per subtest.
		table := fmt.Sprintf("%sfleet-%d", prefix, n.Add(1))
		testenv.CreateTable(t, c, dynamofleet.CreateTableInput(table), dynamofleet.TimeToLiveInput(table))
		clk := clock.NewFake(time.Time{})
		return fleettest.Fixture{Registry: dynamofleet.New(c, table, clk), Clock: clk}
	}})
}
