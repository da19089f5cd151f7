// Package badinput feeds Mill's real binaries bad input (docs/ARCHITECTURE.md,
// Safety):
//
//   - workman_test.go: the workman daemon, built from cmd/workman and run
//     against emulator queues on a test prefix, receives malformed, unknown,
//     incomplete, oversized and hostile messages and must dead-letter each
//     with a reason naming the problem (invalid content IDs at once, as
//     permanent) and keep running.
//   - config_test.go: millctl policy validate|put, millctl stores validate,
//     bitproducer --include and workman --config-dir given invalid files
//     name file:line:col (file:line for filters), exit 1 (2 for usage) and
//     leave the config bucket, files, state and queues as they were.
package badinput
