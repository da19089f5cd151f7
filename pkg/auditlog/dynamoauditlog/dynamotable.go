package dynamoauditlog

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/auditlog"
)

// CreateTableInput describes the audit-log table (on-demand capacity) for
// CreateTable.
func CreateTableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(auditlog.AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(auditlog.AttrSK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(auditlog.AttrGSI1PK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(auditlog.AttrGSI1SK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(auditlog.AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(auditlog.AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{SpaceHistoryIndex()},
	}
}

// SpaceHistoryIndex describes the IndexSpaceHistory GSI (also used to add
// the index to a table created without it).
func SpaceHistoryIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(auditlog.IndexSpaceHistory),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(auditlog.AttrGSI1PK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(auditlog.AttrGSI1SK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}
