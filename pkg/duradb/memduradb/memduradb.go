// Package memduradb is DuraCloud's mill database (duradb.DB) in memory, for
// unit tests. It passes duradbtest.Run.
package memduradb

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/duradb"
)

// DB is a duradb.DB in memory. Safe for concurrent use. Down, when set,
// makes every call fail as an outage (for tests of the circuit).
type DB struct {
	mu       sync.Mutex
	manifest map[string]duradb.ManifestItem
	reports  []duradb.BitReport
	stats    []duradb.SpaceStats
	down     error
}

var _ duradb.DB = (*DB)(nil)

// New returns an empty database.
func New() *DB { return &DB{manifest: map[string]duradb.ManifestItem{}} }

// SetDown makes every later call fail with an outage of err (nil: answer
// again).
func (d *DB) SetDown(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = err
}

func (d *DB) lock() error {
	d.mu.Lock()
	if d.down != nil {
		err := d.down
		d.mu.Unlock()
		return &duradb.UnavailableError{Err: err}
	}
	return nil
}

// PutManifest implements duradb.DB.
func (d *DB) PutManifest(_ context.Context, m duradb.ManifestItem) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, err
	}
	if err := d.lock(); err != nil {
		return false, err
	}
	defer d.mu.Unlock()
	m.Modified = duradb.Millis(m.Modified)
	k := duradb.UniqueKey(m.Account, m.StoreID, m.SpaceID, m.ContentID)
	if old, ok := d.manifest[k]; ok && old.Modified.After(m.Modified) {
		return false, nil
	}
	d.manifest[k] = m
	return true, nil
}

// DeleteSpace implements duradb.DB.
func (d *DB) DeleteSpace(_ context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	if err := d.lock(); err != nil {
		return 0, err
	}
	defer d.mu.Unlock()
	at = duradb.Millis(at)
	var n int64
	for k, m := range d.manifest {
		if m.Account == account && m.StoreID == storeID && m.SpaceID == spaceID && !m.Deleted && !m.Modified.After(at) {
			m.Deleted, m.Modified = true, at
			d.manifest[k] = m
			n++
		}
	}
	return n, nil
}

// SetMissing implements duradb.DB.
func (d *DB) SetMissing(_ context.Context, account, storeID, spaceID, contentID string, missing bool) (bool, error) {
	if err := d.lock(); err != nil {
		return false, err
	}
	defer d.mu.Unlock()
	k := duradb.UniqueKey(account, storeID, spaceID, contentID)
	m, ok := d.manifest[k]
	if !ok || m.Deleted {
		return false, nil
	}
	m.MissingFromStorageProvider = missing
	d.manifest[k] = m
	return true, nil
}

// PutBitReport implements duradb.DB.
func (d *DB) PutBitReport(_ context.Context, r duradb.BitReport) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	r.Completed = duradb.Seconds(r.Completed)
	for i, o := range d.reports {
		if o.Account == r.Account && o.StoreID == r.StoreID && o.SpaceID == r.SpaceID &&
			o.ReportSpaceID == r.ReportSpaceID && o.ReportContentID == r.ReportContentID {
			d.reports[i] = r
			return nil
		}
	}
	d.reports = append(d.reports, r)
	return nil
}

// PutSpaceStats implements duradb.DB.
func (d *DB) PutSpaceStats(_ context.Context, s duradb.SpaceStats) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	s.Modified = duradb.Seconds(s.Modified)
	for i, o := range d.stats {
		if o.Account == s.Account && o.StoreID == s.StoreID && o.SpaceID == s.SpaceID && o.Modified.Equal(s.Modified) {
			d.stats[i] = s
			return nil
		}
	}
	d.stats = append(d.stats, s)
	return nil
}

// Manifest implements duradb.DB.
func (d *DB) Manifest(_ context.Context, account, storeID, spaceID string) ([]duradb.ManifestItem, error) {
	if err := d.lock(); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []duradb.ManifestItem
	for _, m := range d.manifest {
		if m.Account == account && m.StoreID == storeID && m.SpaceID == spaceID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b duradb.ManifestItem) int { return cmp.Compare(a.ContentID, b.ContentID) })
	return out, nil
}

// BitReports implements duradb.DB.
func (d *DB) BitReports(_ context.Context, account, storeID, spaceID string) ([]duradb.BitReport, error) {
	if err := d.lock(); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []duradb.BitReport
	for _, r := range d.reports {
		if r.Account == account && r.StoreID == storeID && r.SpaceID == spaceID {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b duradb.BitReport) int { return b.Completed.Compare(a.Completed) })
	return out, nil
}

// Stats implements duradb.DB.
func (d *DB) Stats(_ context.Context, account, storeID, spaceID string) ([]duradb.SpaceStats, error) {
	if err := d.lock(); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	var out []duradb.SpaceStats
	for _, s := range d.stats {
		if s.Account == account && s.StoreID == storeID && s.SpaceID == spaceID {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b duradb.SpaceStats) int { return a.Modified.Compare(b.Modified) })
	return out, nil
}

// Ping implements duradb.DB.
func (d *DB) Ping(context.Context) error {
	if err := d.lock(); err != nil {
		return err
	}
	d.mu.Unlock()
	return nil
}
