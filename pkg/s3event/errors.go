package s3event

import "errors"

// The errors of the package (test with errors.Is), by the step that
// returns them.

// ErrMalformed wraps every Parse error.
var ErrMalformed = errors.New("s3event: malformed notification")

// Errors of Resolve.
var (
	// ErrUnknownBucket: no registered store lives in the bucket. The event
	// cannot be processed (the audit processor dead-letters it).
	ErrUnknownBucket = errors.New("s3event: no store registered for bucket")
	// ErrIgnored: the key is in a store but is not a content item (a
	// space marker, a reserved key, a key outside every store's prefix).
	ErrIgnored = errors.New("s3event: not a content key")
)

// Verdicts of Confirm that are not a confirmation.
var (
	// ErrNotConfirmed: the object's current state contradicts the event —
	// an ObjectRemoved event for an object that exists, was not written
	// again after the event and is not about another version. The event is
	// forged or mistaken; it must not be acted on (the audit processor
	// dead-letters it as permanent).
	ErrNotConfirmed = errors.New("s3event: not confirmed by HEAD")
	// ErrSuperseded: the object changed after the event (an ObjectCreated
	// event for an object that is gone, an ObjectRemoved event for one
	// written again since, or the removal of a version that is not the
	// current one). The event is skipped; the later change's own event
	// tells the current state.
	ErrSuperseded = errors.New("s3event: event superseded by a later change")
)
