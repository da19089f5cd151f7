// Package bit is the BIT task processor: the bit-integrity check of one
// content item (docs/ARCHITECTURE.md, Bit integrity). It gathers four
// checksums, classifies them into one of the 11 cases of the DuraCloud
// bit-integrity table with a total decision procedure (Decide), acts on the
// case and records the outcome in the bit log.
//
// # The four checksums
//
//   - C (content): the MD5 of the bytes, computed while streaming Get. "N/A"
//     when the store is configured as one that cannot be read back cheaply
//     (ReadSettings.UnreadableKinds, .UnreadableStores); then only Head is
//     called. "N/A" too for an item whose storage class keeps its bytes
//     from being read without a restore (S3 Glacier Flexible Retrieval,
//     Deep Archive, Intelligent-Tiering's archive tiers: Get answers
//     storage.ErrArchived), whatever the store's configuration; the bit log
//     row says "archived: storage class …". A restored copy is read.
//     "404" when the item is not in storage. A BIT task that names an
//     at-rest job (task.Bit.AtRestJob, queued by the bit producer for an
//     archived item) takes C from that job instead: the MD5 the provider
//     computed at rest (S3 Batch Operations' Compute checksum), read from
//     the producer's record in the bit log (bitlog.AtRestJobs), never from
//     the message; the item is only headed (no Get, no restore), and C is
//     not used when the item changed after the job was created. A job the
//     record does not hold for the task's run, space and item is a forged
//     reference (ErrAtRestRef, permanent); an item the provider could not
//     compute is an ERROR row with its error. The row's Method is at-rest.
//     A re-check after a repair (KeyRecheckOf) heads first and reads no
//     archived item (Observer.HeadFirst).
//   - S (storage provider): what the store says the item's MD5 is. Which
//     checksum a copy has is storage.ChecksumOf's rule, shared with the
//     audit processor and duplication: the bytes as read, else the
//     provider's own digest, else the MD5 Mill recorded with the copy
//     (the claim, R: S3 metadata "mill-md5", the fs sidecar). S is chosen
//     from those sources so that one contradicting the bytes shows as
//     C ≠ S. "md5:<hex>" → S is that MD5, except that when the bytes
//     were read, match it, and the claim does not (a copy replaced with
//     its claim kept: the provider vouches for the new bytes, Mill's
//     record says otherwise), S is the claim. "crc64nvme:<b64>" (an S3
//     full-object checksum of a multipart upload, which is not an MD5) →
//     the CRC64NVME of the streamed bytes is computed alongside C; when it
//     equals the provider's value, the provider vouches for these bytes
//     and S is the claim (C when none was recorded); when it differs, S
//     is the provider's own "crc64nvme:<b64>", which agrees with no MD5.
//     When C is N/A the CRC cannot be verified and S is the claim
//     (unverified). A provider that reports no checksum gives S = the
//     claim (or none). "404" when the item is not in storage.
//   - R (the claim) takes part where it differs from S (Checksums.Claim):
//     a copy whose claim a stronger source contradicts is not the copy
//     Mill wrote — replaced or gone sour behind its back — and the claim
//     is evidence for what the item should be, never a reason to trust
//     the copy. The bit log row names it in its details.
//   - I (content index): the checksum of the item's content_index row; null
//     when there is no row, the row is a tombstone (deleted) or it has no
//     checksum.
//   - A (audit log): the checksum of the item's latest audit log entry that
//     speaks of its bytes (auditlog.Log.LatestChecksum: one that carries a
//     checksum, or a DELETE_CONTENT); null when there is none or when that
//     entry is DELETE_CONTENT. Newer entries without a checksum are
//     skipped: DuraStore writes SET_CONTENT_PROPERTIES entries without
//     one, and a property change says nothing of the bytes.
//
// In the bit log and BIT_ERROR tasks a null, N/A or 404 checksum is empty.
//
// # Consensus
//
// The consensus checksum is the value held by the most of the non-null
// values among C (when read), S (when present), I, A and R (where it
// differs from S). A tie is broken in the order S, I, A, R, C: the
// checksum recorded when the item was written (S) beats the records made
// from that write (I, then A), then a claim S does not carry, which beat a
// value just computed from bytes that may have gone sour (C). The
// consensus is what a repair must restore: the BIT_ERROR processor copies
// from another store only a copy that holds it (storage.CopyChecksum.Holds:
// its MD5 by the rule, with no source contradicting another).
//
// # Decision procedure (Decide)
//
// Take the first rule that applies. "X" is the storage-side value: S, or C
// when the provider reported no checksum.
//
//  1. The item is not in storage (404) and I and A are both null → case 11
//     (bit integrity is behind fully processed deletes).
//  2. The item is not in storage and I or A is not null → case 8 (removed
//     in storage, not captured yet).
//  3. C is N/A and there is no S → case 4 (nothing of the storage side can
//     be checked).
//  4. C is N/A, I and A are both non-null, I = A and I ≠ S → case 4 (the
//     provider's checksum disagrees with both records).
//  5. C is N/A and R differs from S (the provider's digest contradicts
//     Mill's claim) → case 4.
//  6. C was read, S is present and C ≠ S: if the consensus is C → case 3
//     (the storage side's checksum is wrong: the provider's, or a claim
//     the records do not follow); otherwise → case 2 (the content went
//     sour or was replaced: the bytes do not hash to the consensus). Ties
//     follow the consensus rule, so C ≠ S with I and A null, or with I = C
//     and A = S, or with all four different, is case 2. A copy replaced
//     with its claim kept is C ≠ S here, never case 10.
//  7. Otherwise the storage side agrees with itself (C = S, or C is N/A and
//     rules 4 and 5 did not apply): compare I and A with X:
//     - I = X and A = X → case 1 (success; C may be N/A);
//     - I = X and A null → case 7 (audit log entry missing);
//     - I = X and A ≠ X → case 6 (audit log out of sync);
//     - A = X and I ≠ X or I null → case 5 (content index wrong or missing);
//     - I null and A null → case 9 (added in storage, not captured yet);
//     - anything else (I and A each either ≠ X or null, not both null) →
//     case 10 (updated in storage, not captured yet).
//
// Every combination of present, missing (404/null/N/A) and disagreeing
// values meets exactly one rule, so the procedure is total.
//
// # Re-read before a disagreement is recorded
//
// When the bytes were read and C disagrees with S (or, when there is no
// S, with I or A), the item is read again before anything is decided: from
// byte 0, over a new connection (storage.WithNewConnection), pinned to the
// revision the first read saw (storage.Reopen). The second observation is
// decided on: a healthy copy whose first read went wrong is SUCCESS, a
// copy that disagrees again keeps its case; the row's details say a
// re-read was needed, what the first read hashed and what the re-read
// found. A revision gone by the re-read is a plain error (Workman retries
// the check); nothing of the first read is recorded. See reread.go.
//
// Each row records its Method (bitlog.MethodRead when bytes were hashed,
// bitlog.MethodStored when none were: C N/A or not in storage), Bytes
// (the bytes hashed by the read whose C the row holds — the re-read's
// when there was one), Archived (the copy's storage class is archival,
// storage.Info.Archived) and its Agent (Config.Agent: this Workman's
// instance and Mill's version, from the processor's configuration; no
// message names it).
//
// # Outcomes (Processor.Handle)
//
// "Last attempt" means task attempts ≥ limit−1, where the limit is
// Workman's MaxAttempts, read from the task's context
// (processors.AttemptsFrom; processors.DefaultMaxAttempts outside Workman).
// "Wait" is what the decision table says: the penultimate attempt
// (attempts = limit−2) returns processors.RetryAfter(
// Config.RecheckDelay) (default 5 minutes) — Workman re-sends the task with
// attempts+1 after the delay; no worker sleeps — and earlier attempts
// return a plain error (Workman's ordinary retry backoff). With the
// default 3 attempts: attempt 0 is retried at once (10 s backoff), attempt
// 1 waits 5 minutes, attempt 2 is final; the check waits once. Rows are
// recorded after the case's actions, so a row means the actions were
// taken. The task may run again in its run (SQS delivers at least once; a
// duplicate message): it then sees what those actions repaired, and its
// SUCCESS (or a "not checked" ERROR) does not replace the run's finding
// (bitlog.Row.Replaces); only
// the bit-error processor's re-check of that case does (KeyRecheckOf, in
// its form: RecheckCase sets the row's Supersedes).
//
//	case  bit log            actions
//	1     SUCCESS            none
//	2     FAILURE            BIT_ERROR on bit-error; internally resolvable when another
//	                         store of the account holds a copy whose MD5 is the consensus
//	3     FAILURE            BIT_ERROR, external (contact the storage provider)
//	4     ERROR (last)       wait unless last attempt; then BIT_ERROR (resolvable as case 2)
//	5     FAILURE            content index checksum set to S in place (SetChecksum); with
//	                         no live row, the row is written from the storage properties
//	                         at the audit entry's time; when the audit entry has null
//	                         properties, the audit entry and the index row are patched
//	                         with the storage properties (mimetype, size, properties)
//	6     FAILURE            BIT_ERROR, internally resolvable (audit log out of sync)
//	7     FAILURE            AUDIT ADD_CONTENT from the storage properties on audit
//	8     ERROR (last)       wait unless last attempt; then BIT_ERROR (resolvable as case 2)
//	9,10  ERROR (last)       wait unless last attempt; then AUDIT ADD_CONTENT on audit
//	11    SUCCESS (run only) nothing is done to the item
//
// Case 11 does nothing, as DuraCloud's decision table says, except that a task of a producer
// run (RunID set) records a SUCCESS row: the run's report counts results
// against the items the producer listed, and an item deleted since it was
// listed must count too, or the report would wait for it. The report leaves
// such rows out of its lines and counts (the item is gone). A check
// outside any run (RunID "") records nothing.
//
// Errors: a malformed BIT task or an unregistered account or store is
// permanent (dead letter); a provider, index, audit log, bit log or queue
// error is returned as is, so Workman retries with backoff.
package bit
