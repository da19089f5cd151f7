// Package memfleet is an in-memory fleet.Registry for unit tests and the
// embedded dev mode; it passes the same conformance suite (fleettest) as
// dynamofleet.
package memfleet
