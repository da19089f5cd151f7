// Package dynamofleet is the fleet.Registry in one DynamoDB table: a
// partition of worker records and one of pauses, so one Query reads all of
// a kind. table.go describes the table (CreateTableInput, and
// TimeToLiveInput for the TTL that removes expired worker records).
package dynamofleet
