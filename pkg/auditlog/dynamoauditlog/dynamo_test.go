package dynamoauditlog_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/auditlogtest"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
)

func TestDynamo(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.DynamoDB()
	prefix := testenv.Prefix(t)
	n := 0
	auditlogtest.Run(t, auditlogtest.Harness{New: func(t *testing.T) auditlog.Log {
		n++
		table := prefix + "audit-" + string(rune('a'+n))
		CreateTable(t, c, table)
		return dynamoauditlog.New(c, table)
	}})
}

// CreateTable makes an audit-log table from table.go's description and
// deletes it when the test ends.
func CreateTable(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	testenv.CreateTable(t, c, dynamoauditlog.CreateTableInput(table), nil)
}
