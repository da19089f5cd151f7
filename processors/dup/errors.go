package dup

import "errors"

// Errors of the processor (test with errors.Is).
var (
	// ErrMissingFromSource: the item is only at the destination, but the
	// source store's content index still lists it as live — content is
	// missing from the source. Nothing is deleted; the task is retried and
	// then dead-lettered for an operator.
	ErrMissingFromSource = errors.New("dup: content missing from the source store (its content index lists it as live)")
	// ErrSourceCorrupt: the source's bytes do not match its recorded
	// checksum; nothing was committed at the destination.
	ErrSourceCorrupt = errors.New("dup: source content does not match its recorded checksum")
	// ErrDestinationChecksum: after a write, the destination reports a
	// checksum other than the source's.
	ErrDestinationChecksum = errors.New("dup: destination checksum differs from the source after the copy")
	// ErrSourceArchived: the item must be copied but the source's bytes are
	// in an archival storage class with no restored copy to read (see the
	// package doc, Cold storage). Nothing is written; the task is
	// dead-lettered at once, after asking for a restore when
	// Config.RestoreArchivedDays is set.
	ErrSourceArchived = errors.New("dup: source content is archived (cold storage)")
)

// ErrReadOnly is returned by every write method of a ReadOnly view.
var ErrReadOnly = errors.New("dup: the source store is read-only to the duplication processor")
