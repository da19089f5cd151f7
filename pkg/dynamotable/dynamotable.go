// Package dynamotable is what the DynamoDB backends of Mill's ports (the
// audit log, the leases, the fleet registry) share. Their tables are made
// one way: billed on demand, keyed by strings, with DynamoDB's TTL where
// records expire (Create, TTL: `millctl setup` creates them from these
// descriptions). A backend holds a Table: its client, narrowed to the
// calls it makes (one interface per call, so the list is its IAM grant),
// the table's name and a clock. Attributes are written with S, N, Unix,
// UnixMilli and Strings and read back through Item, which reads a missing
// or malformed attribute as zero; Identity stores a process identity (a
// lease holder, a fleet worker); ConditionFailed tells a failed condition
// expression from other errors.
package dynamotable

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Create describes an on-demand table for CreateTable: its partition key
// hash and, when sortKey is not empty, its sort key, both strings (S).
// TTL cannot be set at creation: follow with TTL once the table is ACTIVE.
func Create(table, hash, sortKey string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
	}
	add := func(name string, kt types.KeyType) {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt})
	}
	add(hash, types.KeyTypeHash)
	if sortKey != "" {
		add(sortKey, types.KeyTypeRange)
	}
	return in
}

// TTL enables DynamoDB's TTL on attr (a number, epoch seconds), which
// removes expired records eventually; readers never rely on that removal.
func TTL(table, attr string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attr),
			Enabled:       aws.Bool(true),
		},
	}
}
