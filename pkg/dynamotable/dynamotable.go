// Package dynamotable describes the DynamoDB tables of Mill's ports (the
// audit log, the leases, the fleet registry) in the one way they are all
// made: billed on demand, keyed by strings, with DynamoDB's TTL where
// records expire. `millctl setup` creates them from these descriptions.
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
