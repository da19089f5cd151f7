package dynamofleet

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/pkg/dynamotable"
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
	return dynamotable.Create(table, AttrKind, AttrID)
}

// TimeToLiveInput enables TTL on AttrExpiresAt.
func TimeToLiveInput(table string) *dynamodb.UpdateTimeToLiveInput {
	return dynamotable.TTL(table, AttrExpiresAt)
}
