package dynamolease

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestTableInputs(t *testing.T) {
	in := CreateTableInput("leases")
	if aws.ToString(in.TableName) != "leases" || in.BillingMode != types.BillingModePayPerRequest ||
		len(in.KeySchema) != 1 || aws.ToString(in.KeySchema[0].AttributeName) != AttrName || in.KeySchema[0].KeyType != types.KeyTypeHash ||
		len(in.AttributeDefinitions) != 1 || in.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeS {
		t.Fatalf("CreateTableInput: %+v", in)
	}
	ttl := TimeToLiveInput("leases")
	if aws.ToString(ttl.TableName) != "leases" || aws.ToString(ttl.TimeToLiveSpecification.AttributeName) != AttrExpiresAt ||
		!aws.ToBool(ttl.TimeToLiveSpecification.Enabled) {
		t.Fatalf("TimeToLiveInput: %+v", ttl)
	}
	// The lease logic's attribute names must match the table's.
	if attrName != AttrName || attrExpires != AttrExpiresAt {
		t.Fatalf("dynamo.go uses %q/%q, table uses %q/%q", attrName, attrExpires, AttrName, AttrExpiresAt)
	}
}
