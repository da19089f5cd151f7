package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/leasetest"
)

// createTable makes a lease table like the one table.go describes: partition
// key name (S), on-demand, TTL on expires_at.
func createTable(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("create table %s: %v", table, err)
	}
	testenv.CleanupTable(t, c, table)
	w := dynamodb.NewTableExistsWaiter(c)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatalf("wait for table %s: %v", table, err)
	}
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)},
	}); err != nil {
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
