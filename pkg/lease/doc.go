// Package lease makes sure only one process of a kind runs at a time: one
// dupproducer, one bitproducer (docs/ARCHITECTURE.md, Looping producers).
//
// A lease is a named record with a holder and an expiry. Acquire takes it
// when it is free, expired, or already held by the caller; Renew pushes the
// expiry on; Release frees it. Keep renews a held lease in the background and
// cancels a derived context when the lease is lost, so work stops before a
// second holder can start.
//
// Two implementations, one sub-package each, share one contract
// (leasetest.Run): dynamolease, a DynamoDB table with conditional writes (the
// table itself is described by its table.go, with a TTL attribute so expired
// records are removed by DynamoDB eventually), and memlease, for unit tests
// and the embedded dev mode. Both take
// the time from an injected clock, so tests move past an expiry without
// sleeping.
package lease
