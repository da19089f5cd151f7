// Package duradb mirrors Mill's own records into DuraCloud's MySQL mill
// database, so that DuraStore (manifest downloads, BitIntegrityReportRest,
// StorageStatsRest) and DurAdmin, which read that database, stay current
// when Mill runs in place of the Java workers (docs/DURACLOUD.md, Mixed
// deployments). It is off unless --duracloud-db (MILL_DURACLOUD_DB) holds a
// MySQL DSN.
//
// DB is the port: mysqlduradb implements it on MySQL or MariaDB (the tables
// of DuraCloud's mill-db-repo entities, created by its own migrations when
// missing), memduradb in memory for unit tests; duradbtest.Run is the
// conformance suite both pass.
//
// # What becomes a row
//
// Only what Mill recorded itself, never a message's field, and always
// after Mill's own store has it, by wrapping the sink Mill already writes:
//
//   - manifest_item: Manifest wraps the content index. After each
//     Upsert, MarkDeleted, SetChecksum or SetMissing it reads the index's
//     row back (Get) and writes it, whether or not the call changed the
//     row (so a task repeated after a failure of this database writes what
//     it missed); a MarkSpaceDeleted marks the space's rows deleted. A
//     live row is written only when the item is in its store (one HEAD),
//     with the store's checksum (storage.ChecksumOf), size and mimetype:
//     the index may hold what an AUDIT task claimed of an item that is not
//     there. A tombstone has DuraCloud's "unknown" checksum and mimetype
//     and size "0". The row keeps DuraCloud's ordering by the index's
//     event time: a write older than the row changes nothing.
//     missing_from_storage_provider is the index's MissingRun (the bit
//     report found the item missing): for an item absent from its store
//     only an existing row's flag is set, and no row is created.
//   - bit_report: bitreport.Config.Published, after the bit log holds the
//     report, with report_space_id/report_content_id naming the account's
//     admin-space copy when one was made (what DuraStore serves), else the
//     reports store's bucket and key. DuraCloud's result has two values:
//     SUCCESS stays SUCCESS, FAILURE and ERROR are FAILURE, and an EMPTY
//     report (nothing checked) writes no row. A repeated report replaces
//     its row.
//   - space_stats: Stats wraps the statistics store; each Put the store
//     accepted writes a row at the measurement's time (a repeated task
//     replaces it when it measured at the same millisecond, else adds one
//     that StorageStatsRest averages with it).
//
// # Failures
//
// A write this database refuses because it does not answer is an outage:
// the error carries Unavailable() == DependencyMySQL, so Workman opens that
// dependency's circuit and hands the task back (processors.IsUnavailable).
// A row DuraCloud's schema cannot hold (ErrUnrepresentable: a 4-byte UTF-8
// character in utf8mb3 columns, a value longer than its column) is logged
// and skipped: Mill's own records have it, and duplication goes on.
package duradb
