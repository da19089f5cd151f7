package bitreport

import (
	"strconv"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/tsv"
)

// Header is the first line of a report (tab-separated column names). The
// last three say how each verdict was made (bitlog.Row's Method, Bytes,
// Archived): what the run's cost is estimated from.
var Header = []string{
	"date_checked", "account", "store_id", "store_kind", "space_id", "content_id",
	"result", "case", "content_checksum", "storage_checksum", "index_checksum", "audit_checksum", "details",
	"method", "bytes", "archived",
}

// Line returns the report line of a row (with its newline). Every cell is
// encoded by pkg/tsv: one line, one column, no formula (a cell that would
// start one gets a leading '), bidi and line-separator characters escaped.
func Line(r bitlog.Row) string {
	return tsv.Line(
		r.CheckedAt.UTC().Format(time.RFC3339), r.Account, r.StoreID, r.StoreKind, r.SpaceID, r.ContentID,
		string(r.Result), strconv.Itoa(r.Case), r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum, r.Details,
		string(r.Method), strconv.FormatInt(r.Bytes, 10), strconv.FormatBool(r.Archived),
	)
}

// ParseLine splits a report line (without its newline) into its decoded
// fields (tsv.Split).
func ParseLine(line string) []string {
	return tsv.Split(line)
}
