// Package memauditlog is an in-memory auditlog.Log for unit tests and dev
// mode. It stores exactly what dynamoauditlog stores (same keys, same size
// limit) and passes the same conformance suite (auditlogtest).
package memauditlog
