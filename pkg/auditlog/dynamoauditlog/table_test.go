package dynamoauditlog_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
)

func TestCreateTableInput(t *testing.T) {
	in := dynamoauditlog.CreateTableInput("tbl")
	if aws.ToString(in.TableName) != "tbl" || in.BillingMode != types.BillingModePayPerRequest {
		t.Fatalf("name/billing: %+v", in)
	}
	defined := map[string]bool{}
	for _, d := range in.AttributeDefinitions {
		defined[aws.ToString(d.AttributeName)] = d.AttributeType == types.ScalarAttributeTypeS
	}
	for _, a := range []string{auditlog.AttrPK, auditlog.AttrSK, auditlog.AttrGSI1PK, auditlog.AttrGSI1SK} {
		if !defined[a] {
			t.Errorf("attribute %s not defined as S", a)
		}
	}
	if len(in.KeySchema) != 2 || aws.ToString(in.KeySchema[0].AttributeName) != auditlog.AttrPK || in.KeySchema[0].KeyType != types.KeyTypeHash ||
		aws.ToString(in.KeySchema[1].AttributeName) != auditlog.AttrSK || in.KeySchema[1].KeyType != types.KeyTypeRange {
		t.Errorf("key schema: %+v", in.KeySchema)
	}
	if len(in.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("GSIs: %+v", in.GlobalSecondaryIndexes)
	}
	g := in.GlobalSecondaryIndexes[0]
	if aws.ToString(g.IndexName) != auditlog.IndexSpaceHistory || g.Projection.ProjectionType != types.ProjectionTypeAll ||
		aws.ToString(g.KeySchema[0].AttributeName) != auditlog.AttrGSI1PK || aws.ToString(g.KeySchema[1].AttributeName) != auditlog.AttrGSI1SK {
		t.Errorf("GSI: %+v", g)
	}
}
