// Package console is the Mill Console (docs/ARCHITECTURE.md, Console): a web
// UI, served by `millctl console` and `millctl dev --console`: a home page
// that says whether everything is safe, the items and their copies, the
// duplication policies, the queues, the dead letters, the bit-integrity
// runs, the fleet and the storage statistics.
//
// Pages are rendered on the server from embedded templates; the one script
// is a vendored, pinned htmx (assets/), used for live refresh and in-place
// form checks — every page and form also works without it. There is no
// build step: `go build` is all.
//
// Every operation goes through the packages millctl uses: policies through
// pkg/policyedit (pkg/policy's validation, the config store's conditional
// writes), queue depths through internal/ops/queuestats, dead letters through
// pkg/deadletter, bit results through pkg/bitlog, the fleet and its pauses
// through pkg/fleet, items through pkg/contentindex (Searcher), their
// verdicts through pkg/bitlog, their versions through storage.Recoverer,
// restores through pkg/storage/audited, statistics through pkg/spacestats,
// fixity coverage through pkg/fixity, producer runs through pkg/runs, evidence through pkg/evidence, alarms through internal/ops/alarms'
// names. The console implements none of them itself.
//
// Security: a user is authenticated by the configured auth.Authenticator
// and has a role; pages show only the controls the role allows and every
// handler checks the role again. A request naming a host not allowed
// (Config.AllowedHosts; under the "none" mode the loopback names only) is
// refused before anything reads it, so a name rebound to 127.0.0.1 reads
// and changes nothing. Every state-changing request must come from an
// allowed host's page (Sec-Fetch-Site, Origin or Referer) and passes Go's
// http.CrossOriginProtection. A path, query string or form that is not
// UTF-8 text, holds control characters, is malformed or over-long is a 400
// before any page reads it; a form lacking a field, or with a value other
// than those expected, is a 400 and changes nothing. Links are built as
// URLs (net/url), escaped once by the templates. Every response carries a
// strict Content Security Policy (scripts and styles from the console
// itself only, no inline script or style, no framing). Every change is
// logged with its user and recorded in the change log (pkg/changelog).
//
// # Mechanisms
//
// Pages render to a buffer first, so a template error is a 500, never half
// a page. The request path: security headers (the CSP; nosniff;
// Cache-Control: no-store on pages) → the Host check (under "none" by
// default the loopback names and address with the port the request arrived
// on; otherwise, without a list, any Host; another Host gets 421) → the
// path and query string → the origin check on every non-safe method
// (Sec-Fetch-Site same-origin, and the Origin, else the Referer, naming an
// allowed host — not merely the request's Host, which a rebound name
// controls), then http.CrossOriginProtection trusting those origins → the
// authenticator → the role the route needs → the handler. Roles are ordered
// viewer < operator < admin.
//
// Auth modes (package auth): "alb" checks the x-amzn-oidc-data header the
// load balancer signs (ES256; base64url segments with padding, the padded
// text being what is signed): the signer against the configured ARN before
// anything else, then the key for kid (shape-checked, fetched from the
// region's key endpoint, cached, fetched once however many requests ask, a
// failed kid not retried for a minute, at most 10 keys a minute), then the
// signature, issuer, client and expiry. "tokens" reads lines
// "USER ROLE sha256:HEX" (a token is 256 random bits, so SHA-256 suffices;
// compared in constant time; the file re-read when it changes); the browser
// keeps the token in an HttpOnly, SameSite=Strict cookie. "none" is one
// local admin, refused unless the listen address and every allowed host
// are loopback.
//
// Policies: a draft is checked row by row with pkg/policy's Parse and Check
// against the registry, so a problem lands next to its row. A save is S3
// PutObject with If-Match (If-None-Match: * to create), a delete
// DeleteObject with If-Match: one atomic request. History is the config
// bucket's object versions, each carrying its author in metadata
// (x-amz-meta-mill-author, percent-encoded). Delete unlists the account
// first; listing and unlisting re-read and retry on a conflict. The change
// log is one JSON object per change under console-changes/, written with
// If-None-Match: * and keyed by inverted time (newest first).
//
// Queues: depths read as `millctl queues` does, one cached read per
// refresh; the depth charts are the console's own samples (every 30 s, the
// last hour), inline SVG. Bit integrity: runs are the bit log's reports
// grouped by run; case counts and filters are computed page by page up to a
// budget; a report is downloaded only from the configured reports bucket or
// directory, whatever location the bit log holds.
//
// Dead letters (deadletter.Inspector): an index of the last scan's letters —
// provenance, error and the first 4 KiB of each body — at most --dlq-max
// (20,000); a page is 50 letters of that snapshot, newest first, and links
// carry the snapshot's number. The console scans when it starts, when the
// page is opened --dlq-rescan (1 min) after the last scan, after every
// redrive or purge, and on Rescan; before the first scan ends a page waits
// up to 1.5 s for a page's worth, then shows what there is and refreshes
// itself. A redrive starts with a dry run over the snapshot
// (Inspector.Target per letter), then runs in the background at the chosen
// rate, scanning again. Scans, redrives and purges take turns; two console
// tasks' scans can hide messages from each other for up to a hold.
//
// Home (/): fixity coverage (fixity.Source over the spaces space_stats
// knows, rolled up per store; measured in the background at most every
// 10 min, the page showing the last), the failures and errors of each
// space's latest bit report, the dead-letter queue's depth, the fleet's
// running and lost workers and pauses, and Mill's CloudWatch alarms in
// ALARM (one DescribeAlarms by the names alarms.Specs gives), and the
// producer runs in progress (pkg/runs: the latest 20 not completed, each
// with a <progress> bar and its figures in words, done, left and ETA).
// Each figure links to its page; a sentence says all is safe or lists
// what is not. A run's page (/runs/PRODUCER/ID) has its counts, rate, ETA
// and its first 200 failures, dead-lettered first.
//
// Items: a search is contentindex.Searcher over one account's space by
// content-ID prefix, tombstones included, 50 rows a page. An item's page
// reads, per store of the account in the registry: the index row, the
// store's Head (size, MD5, storage class; the CRC-64/NVME when the provider
// reports one), the latest fresh verdict (bitlog.Verdicts from just before
// the content ID), the latest audit event and the newest 10 of its audit
// history (auditlog.ItemHistory, one DynamoDB Query; /item/audit pages
// through the rest, 50 at a time), the store policies naming the
// store, and the store's versions. Restore (admin) is Recoverer.Restore
// through the audited provider (an AUDIT task on the audit queue, as
// millctl content restore), then recorded in the change log. Names longer
// than 1,024 bytes are a 400; names are isolated (bdi) so a bidi override
// cannot reorder the page.
//
// Evidence (Config.Evidence, millctl console --evidence-log and
// --evidence-key): an item's page lists the item's events in the evidence
// log, on any store, as object or as a copy's source (the newest 100; type,
// outcome, time, agent), read up to the latest checkpoint with each event
// checked against it (evidence.Events, as millctl evidence events --item:
// the whole log is read on each view). Each links to its inclusion proof,
// /item/evidence/proof?event=ID, the JSON millctl evidence proof writes. A
// log that does not verify is said so and nothing of it is shown.
//
// Statistics: spacestats Latest grouped as millctl stats --by groups it,
// History as two SVG line charts drawn on the server, and both as CSV
// (a value starting with =, +, -, @ is quoted so no spreadsheet runs it).
//
// Accessibility: the browser tests run axe-core on every page (no serious
// or critical violation) and at 390 px wide (no page wider than the
// screen).
//
// Deployment: infra/console.yaml, a task role that may write the policy
// files and duplication-accounts.json but not the registry, append to the
// change log, purge only the dead-letter queue, send to the work queues,
// and write only the pause partition of the fleet table
// (dynamodb:LeadingKeys).
package console
