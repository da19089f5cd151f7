package fleet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/fleettest"
)

// CreateTable makes a fleet table from table.go's description, removed
// when the test ends.
func createTable(t testing.TB, c *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, fleet.CreateTableInput(table)); err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	testenv.CleanupTable(t, c, table)
	w := dynamodb.NewTableExistsWaiter(c)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", table, err)
	}
	if _, err := c.UpdateTimeToLive(ctx, fleet.TimeToLiveInput(table)); err != nil {
		t.Fatalf("enable TTL on %s: %v", table, err)
	}
}

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	prefix := testenv.Prefix(t)
	var n atomic.Int64
	fleettest.Run(t, func(t *testing.T) fleettest.Harness {
		// Listing reads the whole table: one table per subtest.
		table := fmt.Sprintf("%sfleet-%d", prefix, n.Add(1))
		createTable(t, c, table)
		clk := clock.NewFake(time.Time{})
		return fleettest.Harness{Registry: fleet.NewDynamo(c, table, clk), Clock: clk}
	})
}
