package bitreport

import (
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// Header is the first line of a report (tab-separated column names).
var Header = []string{
	"date_checked", "account", "store_id", "store_kind", "space_id", "content_id",
	"result", "case", "content_checksum", "storage_checksum", "index_checksum", "audit_checksum", "details",
}

// tsvEscaper keeps every field on one line and in one column: backslash,
// tab, newline and carriage return become \\, \t, \n and \r.
var tsvEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// Line returns the report line of a row (with its newline).
func Line(r bitlog.Row) string {
	f := []string{
		r.CheckedAt.UTC().Format(time.RFC3339), r.Account, r.StoreID, r.StoreKind, r.SpaceID, r.ContentID,
		string(r.Result), strconv.Itoa(r.Case), r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum, r.Details,
	}
	for i := range f {
		f[i] = tsvEscaper.Replace(f[i])
	}
	return strings.Join(f, "\t") + "\n"
}

var tsvUnescaper = strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\r`, "\r")

// ParseLine splits a report line (without its newline) into its unescaped
// fields.
func ParseLine(line string) []string {
	f := strings.Split(line, "\t")
	for i := range f {
		f[i] = tsvUnescaper.Replace(f[i])
	}
	return f
}
