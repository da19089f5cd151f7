// Package dynamolease is the lease.Lease in a DynamoDB table: one item per
// lease name, taken, renewed and released with conditional writes. table.go
// describes the table (CreateTableInput, and TimeToLiveInput for the TTL
// attribute that lets DynamoDB remove expired records eventually).
package dynamolease
