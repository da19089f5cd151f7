// Package badinput feeds Mill's real binaries bad input (GitHub issue 11):
// the workman daemon, built from cmd/workman and run against emulator
// queues on a test prefix, receives malformed, unknown, incomplete,
// oversized and hostile messages and must dead-letter each with a reason
// naming the problem and keep running.
package badinput
