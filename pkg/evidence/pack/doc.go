// Package pack makes an evidence pack: a dated bundle of one period's
// evidence that an auditor reads offline (millctl evidence pack). Build
// gathers it; WriteTarGz writes it as one .tar.gz holding one directory,
// mill-evidence-PERIOD/, whose README.md explains every file:
//
//   - ndsa.md and ndsa.json: the NDSA Levels of Digital Preservation v2.0
//     cells Mill can evidence (pkg/ndsa), each requirement's verdict, why,
//     and the files behind it;
//   - checkpoint.txt and verifier-key.txt: the evidence log's latest signed
//     checkpoint and the public key it verifies with (its name is the log's
//     origin);
//   - verification.txt: evidence.Verify of the whole log when the pack was
//     made (OK, or each problem named);
//   - events-summary.json: the period's events, read up to the latest
//     checkpoint and checked against it (evidence.Events), counted by type
//     and outcome and by agent, with the repairs a later fixity check
//     confirmed and the copies found corrupt that a repair fixed;
//   - fixity-coverage.json: pkg/fixity's coverage of every listed space;
//   - copies.json: each space's copies, one per store, with the store's
//     provider, region and threatZone (pkg/stores) and the storage classes
//     the copies' newest verdicts found;
//   - policies.json and policy-history.json: the duplication policies in
//     force (policy.InForce) and the change log's entries of the policies
//     and the store registry up to the period's end;
//   - SHA256SUMS of them all.
//
// A single file, not a directory, because it is what is handed over,
// hashed and kept (it can go beside the log under Object Lock); SHA256SUMS
// lets each file be checked once unpacked. Every figure comes from Mill's
// own records; values from configuration (ids, space names) are escaped
// in the Markdown so they stay text.
//
// A period is a quarter (2026-Q3), a month (2026-07) or an explicit
// [since, until) range (ParsePeriod, Range). Events are counted by their
// time within it; fixity coverage is as of when the pack is made (the
// newest verdict of each copy: pkg/fixity keeps no older state), which
// the README says.
//
// # Keys
//
// The pack holds only the public verifier key. The signer key belongs to
// the one process that writes the log and never leaves it (pkg/evidence,
// Keys); the auditor should get the verifier key from Mill's operators
// through another channel and compare it with the bundle's copy, since a
// bundle made with a forged log and its own key would verify against
// itself. Rotation: a new key starts a new log (new origin, new bucket
// prefix); the old log stays verifiable with its old key, so a pack of a
// period that spans a rotation is made once per log.
package pack
