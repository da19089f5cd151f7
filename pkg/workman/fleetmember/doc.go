// Package fleetmember is a Workman's side of the fleet registry
// (pkg/fleet; docs/ARCHITECTURE.md, Operations): Member writes the
// worker's heartbeat and reads the pauses once per interval, stops
// receiving from paused queues (it is a workman.Pauser), hands back tasks
// of paused types (its processors middleware) and counts results (it is a
// metrics.Recorder).
//
// It lives on the Workman side because it speaks the processors' outcome
// API (processors.Release, the result names); pkg/fleet, the registry, is
// domain and knows nothing of processors.
package fleetmember
