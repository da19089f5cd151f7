// Package fleet is the registry of Workman processes: who is working, on
// what, and what the fleet has paused (docs/ARCHITECTURE.md, Operations).
//
// Every Workman writes a heartbeat record (Worker) once per interval
// (default 30 s): its identity (worker ID, host, EC2 instance and zone),
// version, start time, queues, pool size, the tasks it holds and runs by
// type, its result counts by type, its state (running, degraded, paused,
// draining) and its outages: the dependencies whose circuit is open in its
// Workman (degraded: it holds back the task types that need them, counting
// no attempts). On a clean shutdown it writes state gone. A reader shows a
// record whose heartbeat is older than LostAfter (3) intervals as lost
// (Worker.StateAt, Read).
//
// Operators pause a task type or a queue fleet-wide (Pause). Every Workman
// reads the pauses with its heartbeat: it stops receiving from a paused
// queue and from the queues that carry a paused type (TypeQueues), and a
// task of a paused type that it holds or runs is released (visibility 0),
// so a pause takes effect within one interval. A Workman's side of all
// this is pkg/workman/fleetmember.
//
// Two implementations of Registry, one sub-package each, share one
// contract (fleettest.Run): dynamofleet, one DynamoDB table with a
// partition of worker records and one of pauses (its table.go; expired
// records go by TTL), and memfleet, for unit tests and the embedded dev
// mode. A heartbeat costs one write (PutItem)
// and reading the pauses one strongly consistent Query.
//
// Read is the library view for `millctl fleet` and the console: the
// workers with lost ones marked, totals per state, and the pauses.
package fleet
