package task

import (
	"maps"
	"time"
)

// StorageStats is a STORAGE_STATS task: count the items and bytes of one
// space. A count of a large space goes on in a continuation task that
// carries where it stopped (Marker) and what it counted so far.
type StorageStats struct {
	Account string // required
	StoreID string // required
	SpaceID string // required
	// RunID is the producer run the count belongs to; optional (the
	// processor names a count outside any run itself).
	RunID string
	// Marker is the last content ID counted by the earlier tasks of a
	// continued count; "" for a count that starts at the beginning.
	Marker string
	// Items and Bytes are what the earlier tasks counted (0 at the start).
	Items, Bytes int64
	// Started is when the count began (zero at the start); on the wire
	// epoch milliseconds.
	Started  time.Time
	Attempts int
	Extra    map[string]string
}

var storageStatsFields = []field[StorageStats]{
	str(KeyAccount, true, func(x *StorageStats) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *StorageStats) *string { return &x.StoreID }),
	str(KeySpaceID, true, func(x *StorageStats) *string { return &x.SpaceID }),
	str(KeyRunID, false, func(x *StorageStats) *string { return &x.RunID }),
	str(KeyStatsMarker, false, func(x *StorageStats) *string { return &x.Marker }),
	int64Or0(KeyStatsItems, func(x *StorageStats) *int64 { return &x.Items }),
	int64Or0(KeyStatsBytes, func(x *StorageStats) *int64 { return &x.Bytes }),
	epochMillis(KeyStatsStarted, func(x *StorageStats) *time.Time { return &x.Started }),
}

func (x *StorageStats) common() common { return common{&x.Attempts, &x.Extra} }

// StorageStatsFrom reads a STORAGE_STATS task.
func StorageStatsFrom(t *Task) (StorageStats, error) {
	return readView(t, TypeStorageStats, storageStatsFields, (*StorageStats).common)
}

// Task returns the view as a task.
func (x StorageStats) Task() *Task {
	return writeView(x, TypeStorageStats, storageStatsFields, (*StorageStats).common)
}

// Noop is a NOOP task, used by tests and benchmarks. It accepts any
// properties; all of them are in Extra.
type Noop struct {
	Attempts int
	Extra    map[string]string
}

// NoopFrom reads a NOOP task.
func NoopFrom(t *Task) (Noop, error) {
	r := newReader(t, TypeNoop)
	if r.err != nil {
		return Noop{}, r.err
	}
	return Noop{Attempts: t.Attempts, Extra: maps.Clone(t.Props)}, nil
}

// Task returns n as a task.
func (n Noop) Task() *Task { return newWriter(TypeNoop, n.Attempts, n.Extra).t }
