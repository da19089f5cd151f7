// Package adversarial attacks a running Mill the way an attacker who can
// send to its queues, or a careless operator, would (docs/ARCHITECTURE.md,
// Safety), through the real workman and millctl binaries against the AWS
// emulator and PostgreSQL, with two S3 stores (one bucket versioned) and a
// filesystem store:
//
//   - adversarial_test.go: every input of a list of forged, malformed and
//     hostile tasks, files and configurations — each must be dead-lettered
//     with a reason naming the rule it broke, every object and file outside
//     the good task's item must be byte-identical afterwards (all object
//     versions of every bucket, every file and link of every directory),
//     the preserved items present, and Workman alive: /healthz answers and
//     a good task sent last is processed. Sends are at least once: two
//     attacks' sends are retried by the SDK after the emulator took them
//     (a proxy breaks the answer); each copy of the one sent bare must be
//     dead-lettered, and an attack has more letters than one only as far
//     as the SDK retried its send. resend_test.go counts the retries; the
//     helpers count a task an m.send queued twice as the one send.
//   - random_test.go: a few hundred mixed valid, malformed and forged tasks
//     across every queue in a seeded random order (MILL_SAFETY_SEED
//     replays one; MILL_SAFETY_TASKS sizes the run); afterwards no source
//     item is missing or changed, and every destination item matches its
//     source or is restorable.
//   - console_test.go: the real `millctl console` (--auth none, the bit log
//     in PostgreSQL) attacked as a page whose name was rebound to
//     127.0.0.1, with empty, mistyped and foreign forms and with NUL and
//     invalid UTF-8 in filters: 421, 403 or 400, never a 500, and nothing
//     changes.
//   - aliasing_test.go: registries whose stores alias acme's (one bucket
//     and prefix under two names, nested prefixes, nested, relative or "/"
//     fs roots, ".."): millctl stores validate and put, workman at start
//     and dupproducer each refuse them naming file, line, column and both
//     stores; a DUP task of the alias stays unprocessed and nothing changes.
//     A store whose root is a symbolic link to acme's passes the registry
//     but not the Opener: its DUP task is dead-lettered as permanent.
//   - stalled_test.go: stalled sweeps — stores whose credentials profile
//     is missing, whose bucket is gone or whose fs space record is a
//     symbolic link, beside good ones: dupproducer and bitproducer (real
//     binaries) sweep every good space in each of two runs, name the broken
//     stores (summary, notification, exit status 3), and sweep them once
//     fixed.
//   - biterror_test.go: forged verdicts after a real bit run (bitproducer,
//     then Workman's checks and report) ends in a SUCCESS report — forged
//     BIT_ERRORs of several cases under the finished run, an ad-hoc run, a
//     made-up run and another store, a BIT_REPORT of the run asked for
//     again, a CREATE_SPACE of a space no store has, a STORAGE_STATS
//     continuation with made-up counts, a BIT task with a
//     forged re-check reason, an S3 event naming Mill's processor as its
//     principal; each refused naming its rule or recorded only as
//     observed, and no bit-log row, report or notification states anything
//     Mill did not observe.
//   - reread_test.go: Workman reaches S3 through an HTTP proxy
//     (internal/testkit/faultproxy) that cuts the body of one GET of a bit
//     check and frames the half as the whole object; the check reads the
//     item again and the run ends with 0 FAILURE rows and a SUCCESS report.
//   - sendlog_test.go: Workman reaches SQS through a proxy that breaks the
//     answer to its dead-letter send after the emulator stored it; the
//     letter is queued twice, and Workman's JSON log has the one Warn line
//     (dead-letter queue, attempts 2) naming one of the two copies.
package adversarial
