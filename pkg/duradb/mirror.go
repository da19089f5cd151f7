package duradb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
)

// skip logs and drops a row the schema cannot hold; any other error is
// returned, wrapped.
func skip(log *slog.Logger, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrUnrepresentable) {
		log.Warn("duradb: row not written to DuraCloud's mill database", "row", what, "error", err.Error())
		return nil
	}
	return fmt.Errorf("duradb: %s: %w", what, err)
}

// Stores opens an account's store (a *stores.Opener).
type Stores interface {
	Open(ctx context.Context, account, storeID string) (storage.Provider, error)
}

// Manifest is a content index whose changes are mirrored to db's
// manifest_item (package doc).
type Manifest struct {
	contentindex.Index
	stores Stores
	db     DB
	log    *slog.Logger
}

// NewManifest wraps idx; a live row's values are read from the item in
// its store (logger nil: slog.Default()).
func NewManifest(idx contentindex.Index, st Stores, db DB, logger *slog.Logger) *Manifest {
	if logger == nil {
		logger = slog.Default()
	}
	return &Manifest{Index: idx, stores: st, db: db, log: logger}
}

// ManifestRow is the manifest row of an index row: a tombstone, or (info
// not nil) the item as its store reports it.
func ManifestRow(e contentindex.Entry, info *storage.Info) ManifestItem {
	m := ManifestItem{Account: e.Account, StoreID: e.StoreID, SpaceID: e.SpaceID, ContentID: e.ContentID,
		Checksum: Unknown, MimeType: Unknown, Size: UnknownSize, Deleted: e.Deleted,
		MissingFromStorageProvider: e.MissingRun != "", Modified: Millis(e.Modified)}
	if info != nil {
		m.Checksum = cmp.Or(storage.ChecksumOf(info, nil).MD5, Unknown)
		m.MimeType = cmp.Or(info.MimeType, Unknown)
		m.Size = strconv.FormatInt(info.Size, 10)
	}
	return m
}

// mirror writes the index's current row of item: a tombstone as it is, a
// live row only when the item is in its store, with the store's values
// (an index row may hold an AUDIT task's mimetype and size, or an item
// removed since; such a claim is not DuraCloud's manifest).
func (m *Manifest) mirror(ctx context.Context, item contentindex.Item) error {
	e, err := m.Index.Get(ctx, item)
	if errors.Is(err, contentindex.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var info *storage.Info
	if !e.Deleted {
		prov, err := m.stores.Open(ctx, item.Account, item.StoreID)
		if err != nil {
			return fmt.Errorf("duradb: manifest %s: %w", item, err)
		}
		info, err = prov.Head(ctx, item.SpaceID, item.ContentID)
		if errors.Is(err, storage.ErrNotFound) {
			// Not a row of its own: at most the flag of DuraCloud's row,
			// when the bit report found the item missing.
			if e.MissingRun != "" {
				_, err := m.db.SetMissing(ctx, item.Account, item.StoreID, item.SpaceID, item.ContentID, true)
				return skip(m.log, "manifest "+item.String(), err)
			}
			m.log.Info("duradb: an indexed item not in its store: no manifest row", "item", item.String())
			return nil
		}
		if err != nil {
			return fmt.Errorf("duradb: manifest %s: %w", item, err)
		}
	}
	_, err = m.db.PutManifest(ctx, ManifestRow(*e, info))
	return skip(m.log, "manifest "+item.String(), err)
}

// Upsert implements contentindex.Index.
func (m *Manifest) Upsert(ctx context.Context, e contentindex.Entry) (bool, error) {
	applied, err := m.Index.Upsert(ctx, e)
	if err != nil {
		return applied, err
	}
	return applied, m.mirror(ctx, e.Item)
}

// MarkDeleted implements contentindex.Index.
func (m *Manifest) MarkDeleted(ctx context.Context, item contentindex.Item, at time.Time) (bool, error) {
	applied, err := m.Index.MarkDeleted(ctx, item, at)
	if err != nil {
		return applied, err
	}
	return applied, m.mirror(ctx, item)
}

// MarkSpaceDeleted implements contentindex.Index.
func (m *Manifest) MarkSpaceDeleted(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	n, err := m.Index.MarkSpaceDeleted(ctx, account, storeID, spaceID, at)
	if err != nil {
		return n, err
	}
	_, err = m.db.DeleteSpace(ctx, account, storeID, spaceID, Millis(contentindex.Truncate(at)))
	return n, skip(m.log, "manifest space "+account+"/"+storeID+"/"+spaceID, err)
}

// SetChecksum implements contentindex.Index.
func (m *Manifest) SetChecksum(ctx context.Context, item contentindex.Item, checksum string) error {
	if err := m.Index.SetChecksum(ctx, item, checksum); err != nil {
		return err
	}
	return m.mirror(ctx, item)
}

// SetMissing implements contentindex.Index.
func (m *Manifest) SetMissing(ctx context.Context, item contentindex.Item, runID string) error {
	if err := m.Index.SetMissing(ctx, item, runID); err != nil {
		return err
	}
	return m.mirror(ctx, item)
}

// Stats is a statistics store whose rows are mirrored to db's space_stats.
type Stats struct {
	spacestats.Store
	db    DB
	clock clock.Clock
	log   *slog.Logger
}

// NewStats wraps s (clk nil: the system clock; logger nil: slog.Default()).
func NewStats(s spacestats.Store, db DB, clk clock.Clock, logger *slog.Logger) *Stats {
	clk, logger = clock.Ambient(clk, logger)
	return &Stats{Store: s, db: db, clock: clk, log: logger}
}

// Put implements spacestats.Store: the row goes to Mill's store first,
// then (once accepted) to space_stats at its Measured time.
func (s *Stats) Put(ctx context.Context, st spacestats.Stats) error {
	if st.Measured.IsZero() {
		st.Measured = s.clock.Now()
	}
	if err := s.Store.Put(ctx, st); err != nil {
		return err
	}
	err := s.db.PutSpaceStats(ctx, SpaceStats{Account: st.Account, StoreID: st.StoreID, SpaceID: st.SpaceID,
		Bytes: st.Bytes, Objects: st.Items, Modified: Seconds(st.Measured)})
	return skip(s.log, "space_stats "+st.Account+"/"+st.StoreID+"/"+st.SpaceID, err)
}

// Reports writes a bit_report row for each completed report
// (bitreport.Config.Published).
type Reports struct {
	db  DB
	log *slog.Logger
}

// NewReports returns the bit report sink (logger nil: slog.Default()).
func NewReports(db DB, logger *slog.Logger) *Reports {
	if logger == nil {
		logger = slog.Default()
	}
	return &Reports{db: db, log: logger}
}

// ReportPublished writes rep's row. copySpace and copyID name the
// account's admin-space copy ("" when none was made); the row names it,
// else the reports store's location (package doc).
func (r *Reports) ReportPublished(ctx context.Context, rep bitlog.Report, copySpace, copyID string) error {
	result, ok := JavaResult(rep.Result)
	if !ok {
		r.log.Info("duradb: no bit_report row for a report DuraCloud has no result for",
			"result", string(rep.Result), "account", rep.Account, "store", rep.StoreID, "space", rep.SpaceID)
		return nil
	}
	space, id := copySpace, copyID
	if space == "" || id == "" {
		space, id = LocationParts(rep.Location)
	}
	err := r.db.PutBitReport(ctx, BitReport{Account: rep.Account, StoreID: rep.StoreID, SpaceID: rep.SpaceID,
		ReportSpaceID: space, ReportContentID: id, Result: result, Completed: Seconds(rep.CreatedAt)})
	return skip(r.log, "bit_report "+rep.Account+"/"+rep.StoreID+"/"+rep.SpaceID, err)
}

// LocationParts splits a reports-store location into a space and content
// ID: s3://bucket/key into the bucket and the key; anything else (a file
// path of the dev mode) into "reports" and the location.
func LocationParts(loc string) (space, id string) {
	if u, err := url.Parse(loc); err == nil && u.Scheme == "s3" && u.Host != "" {
		return u.Host, strings.TrimPrefix(u.Path, "/")
	}
	return "reports", loc
}
