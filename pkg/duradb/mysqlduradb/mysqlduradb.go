// Package mysqlduradb is DuraCloud's mill database (duradb.DB) on MySQL or
// MariaDB, through database/sql and github.com/go-sql-driver/mysql. It
// passes duradbtest.Run against MariaDB (localstack/mariadb.sh). Open
// creates the tables it writes where they are missing (Up; the SQL under
// migrations/ mirrors DuraCloud's entities: manifest_item ManifestItem,
// bit_report BitIntegrityReport, space_stats SpaceStats).
package mysqlduradb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/millfleet/mill/pkg/duradb"
)

// DB is a duradb.DB on MySQL. Safe for concurrent use.
type DB struct {
	db *sql.DB
}

var _ duradb.DB = (*DB)(nil)

// Config parses a Go MySQL DSN (user:password@tcp(host:port)/database) and
// sets what this package needs: UTC times, parsed datetimes, and
// timeouts so an unanswering server is an outage rather than a hang.
func Config(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlduradb: DSN: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysqlduradb: DSN names no database")
	}
	cfg.ParseTime, cfg.Loc = true, time.UTC
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Logger = driverLog{}
	return cfg, nil
}

// driverLog sends the driver's own messages (a connection it found
// broken and replaced) to slog at debug level: the errors that matter
// are returned, and classified, by the calls.
type driverLog struct{}

func (driverLog) Print(v ...any) {
	slog.Debug("mysqlduradb: driver", "message", strings.TrimSpace(fmt.Sprint(v...)))
}

// Open connects to dsn and applies the migrations (Up).
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlduradb: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(16)
	db.SetConnMaxLifetime(5 * time.Minute)
	if _, err := Up(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return &DB{db: db}, nil
}

// Close closes the connections.
func (d *DB) Close() error { return d.db.Close() }

// SQL is the connection pool (for tests that run DuraStore's queries).
func (d *DB) SQL() *sql.DB { return d.db }

// classify marks an outage (duradb.UnavailableError) and a row the schema
// cannot hold (duradb.ErrUnrepresentable); other errors are returned as
// they are.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1366, 1406, 1300: // incorrect string value, data too long, invalid character
			return fmt.Errorf("%w: %w", duradb.ErrUnrepresentable, err)
		case 1040, 1053, 1077, 1081, 1152, 1158, 1159, 1160, 1161, 1203, 1927: // connections, shutdown, aborted, killed
			return &duradb.UnavailableError{Err: err}
		}
		return err
	}
	var ne net.Error
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.As(err, &ne) {
		return &duradb.UnavailableError{Err: err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &duradb.UnavailableError{Err: err}
	}
	return err
}

// PutManifest implements duradb.DB: one INSERT … ON DUPLICATE KEY UPDATE
// whose assignments apply only when the row is not later (MySQL assigns
// left to right, so modified comes last). version goes up on every write
// applied, so 0 rows affected means the row was later.
func (d *DB) PutManifest(ctx context.Context, m duradb.ManifestItem) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, err
	}
	const newer = "VALUES(modified) >= modified"
	res, err := d.db.ExecContext(ctx, `INSERT INTO manifest_item (modified, account, store_id, space_id, content_id,
		content_checksum, content_size, content_mimetype, deleted, missing_from_storage_provider, unique_key, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
		ON DUPLICATE KEY UPDATE
		version = IF(`+newer+`, version + 1, version),
		content_checksum = IF(`+newer+`, VALUES(content_checksum), content_checksum),
		content_size = IF(`+newer+`, VALUES(content_size), content_size),
		content_mimetype = IF(`+newer+`, VALUES(content_mimetype), content_mimetype),
		deleted = IF(`+newer+`, VALUES(deleted), deleted),
		missing_from_storage_provider = IF(`+newer+`, VALUES(missing_from_storage_provider), missing_from_storage_provider),
		modified = IF(`+newer+`, VALUES(modified), modified)`,
		duradb.Millis(m.Modified), m.Account, m.StoreID, m.SpaceID, m.ContentID, m.Checksum, m.Size, m.MimeType,
		m.Deleted, m.MissingFromStorageProvider, duradb.UniqueKey(m.Account, m.StoreID, m.SpaceID, m.ContentID))
	if err != nil {
		return false, classify(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, classify(err)
	}
	return n > 0, nil
}

// DeleteSpace implements duradb.DB.
func (d *DB) DeleteSpace(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	at = duradb.Millis(at)
	res, err := d.db.ExecContext(ctx, `UPDATE manifest_item SET deleted = 1, modified = ?, version = version + 1
		WHERE account = ? AND store_id = ? AND space_id = ? AND deleted = 0 AND modified <= ?`,
		at, account, storeID, spaceID, at)
	if err != nil {
		return 0, classify(err)
	}
	n, err := res.RowsAffected()
	return n, classify(err)
}

// SetMissing implements duradb.DB.
func (d *DB) SetMissing(ctx context.Context, account, storeID, spaceID, contentID string, missing bool) (bool, error) {
	res, err := d.db.ExecContext(ctx, `UPDATE manifest_item SET missing_from_storage_provider = ?, version = version + 1
		WHERE unique_key = ? AND deleted = 0`, missing, duradb.UniqueKey(account, storeID, spaceID, contentID))
	if err != nil {
		return false, classify(err)
	}
	n, err := res.RowsAffected()
	return n > 0, classify(err)
}

// PutBitReport implements duradb.DB: the report's row is updated, or
// inserted when it has none (bit_report has no unique key of its own; a
// report is handled by one worker at a time).
func (d *DB) PutBitReport(ctx context.Context, r duradb.BitReport) error {
	if err := r.Validate(); err != nil {
		return err
	}
	at := duradb.Seconds(r.Completed)
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: nothing to roll back
	var id int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM bit_report WHERE account = ? AND store_id = ? AND space_id = ?
		AND report_space_id = ? AND report_content_id = ? ORDER BY id LIMIT 1 FOR UPDATE`,
		r.Account, r.StoreID, r.SpaceID, r.ReportSpaceID, r.ReportContentID).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, `INSERT INTO bit_report (modified, account, store_id, space_id, report_space_id,
			report_content_id, completion_date, display, result, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, 0)`,
			duradb.Millis(time.Now()), r.Account, r.StoreID, r.SpaceID, r.ReportSpaceID, r.ReportContentID, at, r.Result)
	case err == nil:
		_, err = tx.ExecContext(ctx, `UPDATE bit_report SET completion_date = ?, result = ?, display = 1,
			version = version + 1 WHERE id = ?`, at, r.Result, id)
	}
	if err != nil {
		return classify(err)
	}
	return classify(tx.Commit())
}

// PutSpaceStats implements duradb.DB.
func (d *DB) PutSpaceStats(ctx context.Context, s duradb.SpaceStats) error {
	if err := s.Validate(); err != nil {
		return err
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO space_stats (modified, account_id, store_id, space_id, byte_count,
		object_count, version) VALUES (?, ?, ?, ?, ?, ?, 0)
		ON DUPLICATE KEY UPDATE byte_count = VALUES(byte_count), object_count = VALUES(object_count), version = version + 1`,
		duradb.Seconds(s.Modified), s.Account, s.StoreID, s.SpaceID, s.Bytes, s.Objects)
	return classify(err)
}

// Manifest implements duradb.DB.
func (d *DB) Manifest(ctx context.Context, account, storeID, spaceID string) ([]duradb.ManifestItem, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT account, store_id, space_id, content_id, content_checksum, content_size,
		content_mimetype, deleted = 1, missing_from_storage_provider = 1, modified FROM manifest_item
		WHERE account = ? AND store_id = ? AND space_id = ? ORDER BY content_id`, account, storeID, spaceID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []duradb.ManifestItem
	for rows.Next() {
		var m duradb.ManifestItem
		if err := rows.Scan(&m.Account, &m.StoreID, &m.SpaceID, &m.ContentID, &m.Checksum, &m.Size, &m.MimeType,
			&m.Deleted, &m.MissingFromStorageProvider, &m.Modified); err != nil {
			return nil, classify(err)
		}
		m.Modified = m.Modified.UTC()
		out = append(out, m)
	}
	return out, classify(rows.Err())
}

// BitReports implements duradb.DB.
func (d *DB) BitReports(ctx context.Context, account, storeID, spaceID string) ([]duradb.BitReport, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT account, store_id, space_id, report_space_id, report_content_id,
		result, completion_date FROM bit_report WHERE account = ? AND store_id = ? AND space_id = ?
		ORDER BY completion_date DESC, id DESC`, account, storeID, spaceID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []duradb.BitReport
	for rows.Next() {
		var r duradb.BitReport
		var res sql.NullString
		if err := rows.Scan(&r.Account, &r.StoreID, &r.SpaceID, &r.ReportSpaceID, &r.ReportContentID, &res, &r.Completed); err != nil {
			return nil, classify(err)
		}
		r.Result, r.Completed = res.String, r.Completed.UTC()
		out = append(out, r)
	}
	return out, classify(rows.Err())
}

// Stats implements duradb.DB.
func (d *DB) Stats(ctx context.Context, account, storeID, spaceID string) ([]duradb.SpaceStats, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT account_id, store_id, space_id, byte_count, object_count, modified
		FROM space_stats WHERE account_id = ? AND store_id = ? AND space_id = ? ORDER BY modified, id`,
		account, storeID, spaceID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []duradb.SpaceStats
	for rows.Next() {
		var s duradb.SpaceStats
		if err := rows.Scan(&s.Account, &s.StoreID, &s.SpaceID, &s.Bytes, &s.Objects, &s.Modified); err != nil {
			return nil, classify(err)
		}
		s.Modified = s.Modified.UTC()
		out = append(out, s)
	}
	return out, classify(rows.Err())
}

// Ping implements duradb.DB.
func (d *DB) Ping(ctx context.Context) error { return classify(d.db.PingContext(ctx)) }
