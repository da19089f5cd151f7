package dynamolease

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The lease table's schema: one item per lease, keyed by its name, billed
// on demand, with DynamoDB's TTL removing expired records eventually (the
// lease logic never relies on that removal: an expired record is free).
const (
	// AttrName is the partition key (S): the lease name, e.g. "bitproducer".
	AttrName = "name"
	// AttrExpiresAt (N, epoch seconds) is the expiry and the TTL attribute.
	AttrExpiresAt = "expires_at"
)

// CreateTableInput describes the lease table for CreateTable. TTL cannot
// be set at creation: follow with TimeToLiveInput once the table is ACTIVE.
func CreateTableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrName), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrName), KeyType: types.KeyTypeHash},
		},
	}
}

// TimeToLiveInput enables TTL on AttrExpiresAt.
func TimeToLiveInput(table string) *dynamodb.UpdateTimeToLiveInput {
	return &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	}
}
