// Package derive makes Mill's evidence log (pkg/evidence) from Mill's own
// records, and checks the log against them. No queue message ever becomes
// an event: one appender, the log's only writer (millctl evidence append,
// under a lease), derives the events from what Mill recorded itself.
//
// # Events from records
//
// A bit-log row whose content checksum was made from the copy (Method read
// or at-rest) is a fixity check (FromRow): its digest is the content
// checksum (MD5, or CRC-64/NVME or SHA-256 when so recorded), the expected
// digest the first of the index, audit and storage checksums of the same
// algorithm, the outcome SUCCESS → success, FAILURE → failure, ERROR →
// warning; the detail names the run and the decision table's case. The
// agent is the Workman the row names (bitlog.Row.Agent, which the bit
// processor writes from its own configuration): "mill workman" with its
// instance and Mill version; a row naming none (written before agents
// were recorded) keeps the bit check (Users.BitAgent) as agent.
// An audit-log entry (FromEntry) is a replication when the duplication
// processor or the DuraCloud migration (Users.Migration; eventDetail
// "migration; …") wrote the copy (ADD_CONTENT, COPY_CONTENT), a repair when the
// bit error processor did (ADD_CONTENT; the fixity check after it is the
// re-check's row, an event of its own), and a deletion for every
// DELETE_CONTENT, with its rule: the space's store policy for
// duplication, otherwise the request of the user the entry names. The
// agent is Mill's processor for Mill's own users, otherwise the person.
// The source copy of a replication or repair is in the store the entry
// names (auditlog.Entry.SourceStoreID, written by the duplication or
// repair that read it) and Unrecorded when it names none. Like the
// entry's user, the source store is a belief recorded as the AUDIT
// message said it (the audit processor keeps it only when it names
// another registered store of the account): the event says which store
// Mill's writer reported reading, not that Mill verified the read.
// Users' writes, property changes and space-level entries are not events.
//
// Each event's ID is derived from its record's identity (RowID: the row's
// key and the time of its check; EntryID: the entry's table key), so the
// same record always gives the same event, and a record changed later
// gives either another ID (its time or key changed) or the same ID with
// other content.
//
// # The appender
//
// Appender.Run makes one pass over the records timed in [cursor,
// now−Settle): the bit log by time of check (bitlog.Checked), then the
// audit log (auditlog.Between), a page at a time; each page's events are
// one Append, after which the cursor (the blob CursorKey of the log: the
// pass's period, the source and the page token reached) is saved. Killed
// at any moment, the next pass resumes from the saved cursor: the one page
// it derives again was the log's last Append, within the log's
// deduplication window, so its events are dropped as duplicates — none
// lost, none twice. A log with events and no cursor (lost, or removed as
// unreadable) is read whole first, and no event it holds is appended
// again. A record written more than Settle after its time (an
// audit queue backlog) is missed by the pass; the cross-check names it.
// A record that cannot be an event (a field out of bounds) is skipped and
// reported, never guessed at.
//
// # The cross-check
//
// CrossCheck compares the records of a period with the log's events of
// that period: every record that derives an event must have it in the log
// with the same content, and every event of the period must have its
// record. Each mismatch is named: a bit-log row whose result (or digest)
// was changed in PostgreSQL differs from its event in the named fields; an
// audit-log entry altered in DynamoDB likewise; a record whose event is
// missing (deleted from the log, or the record's time or key changed); an
// event whose record is gone. A fixity check whose row a later check of
// the same run replaced (a redelivered check, or the re-check after a
// repair) is counted, not a mismatch. With the content index given, the
// row of each copy a replication, repair or deletion of the period was
// the latest write of must hold what that write left (live with the
// checksum written, or deleted); a row changed in place or a write lost
// is named.
//
// # What the records cannot give
//
// The bit log keeps one row per run and copy: a failed check that the bit
// error processor repaired and re-checked in the same run is replaced by
// the re-check before a pass sees it, unless a pass ran in between; the
// repair event (and the failure's BIT_ERROR report) stands for it. Rows
// written before agents were recorded name no Workman instance or Mill
// version, and the audit log no source store of a replication or repair
// before those were recorded: the events say so (the bit check as agent,
// the store Unrecorded) rather than guess.
package derive
