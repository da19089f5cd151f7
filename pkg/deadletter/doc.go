// Package deadletter is the dead-letter queue's message format and the
// operator's tools for it (docs/ARCHITECTURE.md, Dead letters).
//
// Workman writes a dead letter with Encode (or EncodeRaw when the envelope
// would be too large); Decode reads either form. The tools — scanning,
// listing, finding, redriving and purging — are used by `millctl dlq` and
// the console alike.
package deadletter
