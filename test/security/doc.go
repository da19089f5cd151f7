// Package security holds Mill's security tests (GitHub issue 11):
//
//   - sqlparams_test.go: every SQL statement Mill's database code runs is a
//     constant (or constant-only expression); values travel as parameters.
//     The test reads the Go sources with go/ast.
//   - fsstore_test.go: hostile content and space IDs cannot reach outside a
//     filesystem store's root; the filesystem is inspected afterwards.
//   - secrets_test.go: a full setup → content put → workman run with debug
//     logging and canary credentials never prints a credential.
package security
