// Package memlease is an in-process lease.Lease for unit tests and the
// embedded dev mode; it passes the same conformance suite (leasetest) as
// dynamolease.
package memlease
