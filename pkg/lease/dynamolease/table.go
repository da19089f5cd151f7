package dynamolease

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/pkg/dynamotable"
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
	return dynamotable.Create(table, AttrName, "")
}

// TimeToLiveInput enables TTL on AttrExpiresAt.
func TimeToLiveInput(table string) *dynamodb.UpdateTimeToLiveInput {
	return dynamotable.TTL(table, AttrExpiresAt)
}
