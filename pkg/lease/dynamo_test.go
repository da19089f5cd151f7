package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

// createTable makes a lease table from table.go's description.
func createTable(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, lease.CreateTableInput(table)); err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	testenv.CleanupTable(t, c, table)
	w := dynamodb.NewTableExistsWaiter(c)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", table, err)
	}
	if _, err := c.UpdateTimeToLive(ctx, lease.TimeToLiveInput(table)); err != nil {
		t.Fatalf("enable TTL on %s: %v", table, err)
	}
}

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	table := testenv.Prefix(t) + "leases"
	createTable(t, c, table)
	leasetest.Run(t, func(t *testing.T) leasetest.Harness {
		clk := clock.NewFake(time.Time{})
		return leasetest.Harness{Lease: lease.NewDynamo(c, table, clk), Clock: clk}
	})
}
