package dynamofleet

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The fleet table's schema: worker records and pauses in one table, billed
// on demand, each kind in its own partition so one Query reads all of a
// kind. DynamoDB's TTL removes expired worker records eventually; readers
// never rely on it.
const (
	// AttrKind is the partition key (S): KindWorker or KindPause.
	AttrKind = "kind"
	// AttrID is the sort key (S): the worker ID, or the pause's Key.
	AttrID = "id"
	// AttrExpiresAt (N, epoch seconds) is the TTL attribute.
	AttrExpiresAt = "expires_at"
	// KindWorker and KindPause are the two partitions.
	KindWorker = "worker"
	KindPause  = "pause"
)

// CreateTableInput describes the fleet table for CreateTable. TTL cannot be
// set at creation: follow with TimeToLiveInput once the table is ACTIVE.
func CreateTableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrKind), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrID), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrKind), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrID), KeyType: types.KeyTypeRange},
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
