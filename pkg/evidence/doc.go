// Package evidence is Mill's evidence an auditor can check: every
// preservation action Mill takes (a fixity check, a replication, a deletion,
// a repair) as a PREMIS 3 event, kept in a tamper-evident, append-only log
// that anyone holding the log's blobs and its public verifier key can check
// offline.
//
// # Events
//
// An Event is one preservation action on one copy of a content item (the
// item in one store): its type, time, outcome, the copy it acted on (and for
// a replication or repair the copy it read), the fixity it observed
// (algorithm, digest, the digest it expected, and the method: the bytes
// read back, or a digest the provider computed at rest), the rule that
// authorised a deletion, and its agent (a Workman instance with Mill's
// version, or the operator of a console or millctl action). Event types,
// outcomes, agent types and roles and digest algorithms are recorded with the
// Library of Congress preservation vocabularies (id.loc.gov/vocabulary/
// preservation/...); CRC-64/NVME, which no vocabulary lists, is a local term
// beside MD5 and SHA-256. A repair is recorded as a replication from the good
// copy to the damaged one (eventDetail "repair"); the fixity check after it
// is an event of its own. EncodePREMIS writes events as PREMIS 3 XML.
//
// An event's canonical bytes (Event.Canonical) are compact JSON with the
// fields in a fixed order, no maps, no floating point, times as RFC 3339
// UTC strings and only valid UTF-8: one event has exactly one encoding,
// and ParseCanonical accepts only that encoding, so a leaf of the log reads
// back to the same event and hashes to the same leaf hash. An event's ID is
// chosen by its emitter from the action's identity (EventID; package
// derive, the log's one writer, uses the identity of the Mill record the
// event is derived from), so the same action reported twice — an appender
// re-deriving a page after a crash — has the same ID, and the log keeps it
// once.
//
// # The log
//
// Log appends events in batches. Each event's canonical bytes are a leaf of
// a Merkle tree in the tiled transparency-log format of golang.org/x/mod/
// sumdb/tlog (RFC 6962 hashing, tiles of height 8): hash tiles at
// tile/8/L/NNN, the leaves themselves in data tiles at tile/8/data/NNN (one
// canonical event a line), and after every batch a checkpoint (the C2SP
// tlog-checkpoint text: origin, tree size, root hash) signed with an
// Ed25519 note key (golang.org/x/mod/sumdb/note), written to
// checkpoints/SIZE (every checkpoint is kept) and then to checkpoint (the
// latest). Everything is stored in a blob.Store (pkg/blob: a dirblob
// directory or an s3blob bucket and prefix) bounded by MaxBlob.
//
// A batch is committed when its checkpoint is written. A writer that dies
// before that leaves tiles beyond the last checkpoint; the next writer
// starts from the last checkpoint and overwrites them, so the uncommitted
// events are neither lost (the caller, which saw no success, appends them
// again) nor doubled. A writer that dies after the checkpoint but before its
// caller saw the success gets the same events again: the log drops every
// event whose ID it holds within its deduplication window (the last
// DedupWindow leaves, read back when the log opens). After a failed
// Append a Log reads its state back from the blobs before the next one, as
// a reopened log does, since the failed batch may have been committed.
// One writer per log:
// two processes appending to one log at once overwrite each other's
// uncommitted tiles and checkpoints (Verify names the damage).
//
// Committer is how a process's many workers share one Log: Record waits
// until the batch holding its event is committed (group commit: a batch
// closes at MaxBatch events or MaxDelay after its first), so a worker that
// acknowledges its task only after Record returns loses no event when the
// process is killed, and one that records again after an error adds none
// twice.
//
// # Verification
//
// Verify needs only the blobs and the verifier key. It checks every
// checkpoint's signature and that its origin is the key's name; that the
// checkpoint history only grows and that each checkpoint is consistent with
// the next (tlog.ProveTree / tlog.CheckTree: no history rewritten); that the
// latest checkpoint is the newest of the history (not replaced by an older
// one); that every leaf is a canonical event, each ID once; that the leaves
// hash to the signed roots; and that every stored hash tile is the one the
// leaves give. Each mismatch is named (the checkpoint, the tile, the leaf).
// Events reads the events up to the latest checkpoint, checking each data
// tile's leaves against the signed tree as it goes (an export needs no
// full verification to trust what it prints). Prove exports an event's
// inclusion proof (tlog.ProveRecord) with its canonical bytes and the
// signed checkpoint as one self-contained file; CheckProof checks such a
// file with only the verifier key.
//
// # Keys
//
// GenerateKey (millctl evidence keygen) makes a key pair named after the
// log (the checkpoints' origin). The signer key is configuration of the
// one process that writes the log (LoadSigner: a file only its owner can
// read, or an environment variable), never in the repository; the verifier
// key is public and goes to auditors. A new key starts a new log: the old
// one stays verifiable with its own verifier key.
//
// # What the log proves, and what it does not
//
// A valid log proves that the events it holds were signed into it by the
// holder of the signing key in this order, and that none was changed,
// removed or reordered after the checkpoint that covers it: a change to a
// leaf, a tile or a checkpoint is detected and named, and a third party with
// a proof and the public key can check one event without trusting Mill.
//
// It does not prove that an event is true (that Mill observed what it
// recorded): it proves what Mill said, and in what order (a checkpoint
// carries no time; an event's time is what its emitter wrote). It does not prove
// that every action was logged: completeness is checked by comparing the
// log with the bit log and the audit log (package derive, millctl evidence
// verify --cross-check; the content index is not compared yet).
// A holder of the signing key can write a different history from the
// start; an attacker who can delete the blobs can delete the log. Keeping
// the signing key away from the blobs' writers and the blobs in an S3
// bucket with Object Lock in compliance mode (a separate stack, so an
// operator of the main stack cannot rewrite them) is what makes the log
// independent; a verifier that keeps the last checkpoint it trusted
// (VerifyOptions.Trusted) also detects a log rolled back as a whole.
package evidence
