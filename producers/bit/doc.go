// Package bit is the bit-integrity looping producer (docs/ARCHITECTURE.md,
// Bit integrity and Looping producers): it walks accounts → stores → spaces,
// filtered by inclusion and exclusion files (ParseFilter), and queues one BIT
// task per content item — 1000 per bite, interleaved across spaces by the
// looping framework, while the bit queue is under its maximum size — and,
// once a space's listing is complete, one BIT_REPORT on the bit-report queue
// carrying the run ID and the number of items listed.
//
// Wiring (what cmd/bitproducer does):
//
//	p, _ := bit.New(bit.Config{Registry: reg, Opener: opener, Filter: f})
//	loop, _ := looping.New(looping.Config{
//		Kind:     bit.Kind,
//		Producer: p,
//		Queue:    &bit.Router{Bit: bitQueue, Report: reportQueue},
//		State:    state, Lease: lease, Frequency: freq,
//	})
//	sum, err := loop.Run(ctx)
package bit
