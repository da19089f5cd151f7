package dynamotable_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/dynamotable"
)

func TestCreate(t *testing.T) {
	s := types.ScalarAttributeTypeS
	for _, tc := range []struct {
		name          string
		hash, sortKey string
		want          *dynamodb.CreateTableInput
	}{
		{"hash only", "name", "", &dynamodb.CreateTableInput{
			TableName: aws.String("t"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("name"), AttributeType: s}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("name"), KeyType: types.KeyTypeHash}},
		}},
		{"hash and sort", "kind", "id", &dynamodb.CreateTableInput{
			TableName: aws.String("t"), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("kind"), AttributeType: s},
				{AttributeName: aws.String("id"), AttributeType: s},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("kind"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("id"), KeyType: types.KeyTypeRange},
			},
		}},
	} {
		if got := dynamotable.Create("t", tc.hash, tc.sortKey); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Create = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestTTL(t *testing.T) {
	got := dynamotable.TTL("t", "expires_at")
	if aws.ToString(got.TableName) != "t" || aws.ToString(got.TimeToLiveSpecification.AttributeName) != "expires_at" ||
		!aws.ToBool(got.TimeToLiveSpecification.Enabled) {
		t.Errorf("TTL = %+v", got)
	}
}
