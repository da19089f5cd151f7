package stores

import "time"

// ArchivedMethod is how a store's archived copies (S3 Glacier Flexible
// Retrieval, Deep Archive, the archive tiers of Intelligent-Tiering) get a
// fresh fixity verdict.
type ArchivedMethod string

// Archived methods.
const (
	// ArchivedComputeChecksum: S3 Batch Operations' Compute checksum
	// computes each object's checksum at rest (no GET, no restore).
	ArchivedComputeChecksum ArchivedMethod = "compute-checksum"
	// ArchivedRestore: the copy is restored, then read and hashed. The bit
	// producer asks for a temporary restored copy (bitproducer
	// --restore-days, --restore-tier) instead of queueing a BIT its run
	// could not read; a later run, finding the copy restored, reads and
	// hashes it. Until then the copy stays due: it costs a restore and a
	// second run per verdict (docs/CAPACITY.md).
	ArchivedRestore ArchivedMethod = "restore"
	// ArchivedNone: archived copies are never verified; they count as not
	// covered. It must be written out: it is never a default.
	ArchivedNone ArchivedMethod = "none"
)

// Default fixity intervals (Fixity).
const (
	DefaultFixityInterval         = 90 * 24 * time.Hour
	DefaultArchivedFixityInterval = 365 * 24 * time.Hour
)

// Fixity is a store's fixity target: the interval within which every copy
// must get a fresh verdict (read and hashed, or computed at rest), how its
// archived copies are verified, and which share of its copies a run checks.
// In accounts.json it is the store's optional "fixity" object:
//
//	"fixity": {"interval": "90d", "archivedInterval": "365d",
//	           "archivedMethod": "compute-checksum", "sampleRate": 1}
//
// Durations are Go durations or a whole number of days ("90d").
type Fixity struct {
	// Interval is the target of copies in a readable storage class
	// (DefaultFixityInterval when unset).
	Interval time.Duration
	// ArchivedInterval is the target of archived copies
	// (DefaultArchivedFixityInterval when unset).
	ArchivedInterval time.Duration
	// ArchivedMethod: ArchivedComputeChecksum when unset on an s3 store.
	ArchivedMethod ArchivedMethod
	// SampleRate is the share of the store's copies a run checks, in
	// (0, 1]; 1 when unset.
	SampleRate float64
}

// IntervalFor returns the target interval of a copy: ArchivedInterval when
// archived, Interval otherwise.
func (f Fixity) IntervalFor(archived bool) time.Duration {
	if archived {
		return f.ArchivedInterval
	}
	return f.Interval
}
