// Package dynamoauditlog is the auditlog.Log in a DynamoDB table: one item
// per audit event under the keys auditlog defines, the space-history global
// secondary index, and CreateTableInput, the table's description for
// CreateTable (used by `millctl setup` and the tests).
package dynamoauditlog
