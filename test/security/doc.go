// Package security holds Mill's security tests (docs/ARCHITECTURE.md,
// Safety):
//
//   - sqlparams_test.go: every SQL statement Mill's database code runs is a
//     constant (or constant-only expression); values travel as parameters.
//     The test reads the Go sources with go/ast.
//   - fsstore_test.go: hostile content and space IDs cannot reach outside a
//     filesystem store's root; the filesystem is inspected afterwards.
//   - secrets_test.go: setup → content put → workman (AUDIT, DUP, NOOP and a
//     dead-lettered task) → dlq list → queues, plus a refused database
//     connection, through the real binaries with debug logging, canary AWS
//     keys and a canary PostgreSQL role: no output and no dead letter holds
//     a credential, raw or URL/base64-encoded.
package security
