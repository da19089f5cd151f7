package main

import "strings"

// group is a group of millctl commands: those named under it ("dlq list"
// under "dlq"). A group that is also a command (console, dev, content
// props) runs alone and lists its commands in its help; any other is only
// a list (`millctl dlq` is a usage error that shows it).
type group struct {
	name string // "" for the commands at the top
	// summary describes the group in `millctl GROUP`; empty: its commands'
	// names.
	summary  string
	commands []*command
}

// commandTree is millctl's command tree: every group and every command,
// with its one-line summary, its usage text (a constant next to its
// options) and its typed options (bind).
func commandTree() []group {
	return []group{
		{commands: []*command{
			{name: "setup", summary: "create every queue, bucket and table and migrate the database (idempotent)", usage: setupUsage, flags: bind[setupOptions]},
			{name: "queues", summary: "show the depth of the seven queues (visible, in flight, delayed, oldest message age)", usage: queuesUsage, flags: bind[queuesOptions]},
			{name: "enqueue", summary: "send tasks to a queue (from flags or files; --count for load tests)", usage: enqueueUsage, flags: bind[enqueueOptions]},
			{name: "run", summary: "process one queue's tasks in the foreground until it is empty", usage: runUsage, flags: bind[runOptions]},
			{name: "fleet", summary: "show the Workman fleet: every worker's state, queues, tasks and counts; the pauses", usage: fleetUsage, flags: bind[fleetOptions]},
			{name: "pause", summary: "pause a task type or a queue fleet-wide (every Workman within one heartbeat)", usage: pauseUsage, flags: bind[pauseOptions]},
			{name: "resume", summary: "lift a fleet-wide pause of a task type or a queue", usage: resumeUsage, flags: bind[resumeOptions]},
			{name: "runs", summary: "producer runs: tasks queued, done, failed, dead-lettered, left, rate, ETA; --watch a run's progress", usage: runsUsage, flags: bind[runsOptions]},
			{name: "stats", summary: "storage statistics: items and bytes per account, store or space, and over time", usage: statsUsage, flags: bind[statsOptions]},
			{name: "version", summary: "print the build's version", usage: versionUsage, flags: bind[versionOptions]},
		}},
		{name: "console", commands: []*command{
			{name: "console", summary: "serve the Mill Console: policies, queues, dead letters, bit integrity, fleet, in a browser", usage: consoleUsage, flags: bind[consoleOptions]},
			{name: "console token", summary: "mint a console token for a user and role (--auth tokens)", usage: consoleTokenUsage, flags: bind[consoleTokenOptions]},
		}},
		{name: "dev", commands: []*command{
			{name: "dev", summary: "run the whole mill in one process (no AWS, no database) and show what it finds and fixes", usage: devUsage, flags: bind[devOptions]},
			{name: "dev load", summary: "put the dev mode's demo (accounts, stores, policies, content) on the local emulator or AWS", usage: devLoadUsage, flags: bind[devLoadOptions]},
		}},
		{name: "migrate", summary: "database migrations, and the migration of a DuraCloud store's content to a Mill store", commands: []*command{
			{name: "migrate duracloud", summary: "copy and verify a DuraCloud store's spaces into a Mill store (resumable, audited, reported)", usage: migrateDuraCloudUsage, flags: bind[migrateDuraCloudOptions]},
			{name: "migrate up", summary: "apply every pending database migration", usage: migrateUpUsage, flags: bind[migrateUpOptions]},
			{name: "migrate down", summary: "revert the latest database migrations (--steps, default 1)", usage: migrateDownUsage, flags: bind[migrateDownOptions]},
			{name: "migrate status", summary: "list database migrations with their applied time", usage: migrateStatusUsage, flags: bind[migrateStatusOptions]},
		}},
		{name: "policy", summary: "duplication policies in the config source", commands: []*command{
			{name: "policy get", summary: "print an account's duplication policy", usage: policyGetUsage, flags: bind[policyGetOptions]},
			{name: "policy put", summary: "validate and store an account's duplication policy", usage: policyPutUsage, flags: bind[policyPutOptions]},
			{name: "policy delete", summary: "stop duplicating an account: remove its policy and its listing", usage: policyDeleteUsage, flags: bind[policyDeleteOptions]},
			{name: "policy validate", summary: "check duplication policy files; errors as file:line:col", usage: policyValidateUsage, flags: bind[policyValidateOptions]},
			{name: "policy list", summary: "list the accounts considered for duplication and their policies", usage: policyListUsage, flags: bind[policyListOptions]},
		}},
		{name: "stores", summary: "the registry of accounts and stores (accounts.json)", commands: []*command{
			{name: "stores validate", summary: "check accounts.json (a local FILE, or the one in the config source)", usage: storesValidateUsage, flags: bind[storesValidateOptions]},
			{name: "stores put", summary: "validate and store accounts.json, the registry of accounts and stores", usage: storesPutUsage, flags: bind[storesPutOptions]},
			{name: "stores get", summary: "print accounts.json from the config source", usage: storesGetUsage, flags: bind[storesGetOptions]},
			{name: "stores list", summary: "list the accounts and stores of the registry", usage: storesListUsage, flags: bind[storesListOptions]},
		}},
		{name: "content", summary: "read and change content through the audited providers", commands: []*command{
			{name: "content put", summary: "store a file in a space of a registered store (audited)", usage: contentPutUsage, flags: bind[contentPutOptions]},
			{name: "content get", summary: "write a content item to stdout or --out", usage: contentGetUsage, flags: bind[contentGetOptions]},
			{name: "content ls", summary: "list the spaces of a store, or the content of a space", usage: contentLsUsage, flags: bind[contentLsOptions]},
			{name: "content rm", summary: "delete a content item (audited)", usage: contentRmUsage, flags: bind[contentRmOptions]},
			{name: "content props", summary: "show a content item's checksum, size, mimetype and properties", usage: contentPropsUsage, flags: bind[contentPropsOptions]},
			{name: "content versions", summary: "list the recoverable versions of a content item", usage: contentVersionsUsage, flags: bind[contentVersionsOptions]},
			{name: "content restore", summary: "bring back a deleted or replaced content item (audited)", usage: contentRestoreUsage, flags: bind[contentRestoreOptions]},
		}},
		{name: "content props", commands: []*command{
			{name: "content props set", summary: "set content properties (audited)", usage: contentPropsSetUsage, flags: bind[contentPropsSetOptions]},
		}},
		{name: "dlq", summary: "the dead-letter queue: list, show, redrive, purge", commands: []*command{
			{name: "dlq list", summary: "list dead-lettered tasks (without consuming them)", usage: dlqListUsage, flags: bind[dlqListOptions]},
			{name: "dlq show", summary: "show one dead-lettered task in full", usage: dlqShowUsage, flags: bind[dlqShowOptions]},
			{name: "dlq redrive", summary: "send dead-lettered tasks back to their source queues", usage: dlqRedriveUsage, flags: bind[dlqRedriveOptions]},
			{name: "dlq purge", summary: "delete dead-lettered tasks (all, or those matching filters)", usage: dlqPurgeUsage, flags: bind[dlqPurgeOptions]},
		}},
		{name: "bitlog", summary: "bit integrity results and their retention", commands: []*command{
			{name: "bitlog results", summary: "list bit check results (filter by run, account, store, space, result)", usage: bitlogResultsUsage, flags: bind[bitlogResultsOptions]},
			{name: "bitlog reports", summary: "list bit integrity reports, newest first", usage: bitlogReportsUsage, flags: bind[bitlogReportsOptions]},
			{name: "bitlog retention", summary: "show, and with --apply apply, the retention of the bit log and of content-index tombstones", usage: bitlogRetentionUsage, flags: bind[bitlogRetentionOptions]},
		}},
		{name: "fixity", summary: "fixity coverage: which copies have a fresh verdict within their store's target", commands: []*command{
			{name: "fixity coverage", summary: "per store and space: copies, within target, overdue, oldest verdict, share by method", usage: fixityCoverageUsage, flags: bind[fixityCoverageOptions]},
		}},
		{name: "evidence", summary: "the tamper-evident evidence log: verify it offline, export and check inclusion proofs", commands: []*command{
			{name: "evidence verify", summary: "verify an evidence log with only its blobs and public key; names each mismatch", usage: evidenceVerifyUsage, flags: bind[evidenceVerifyOptions]},
			{name: "evidence proof", summary: "export an event's inclusion proof as a self-contained file", usage: evidenceProofUsage, flags: bind[evidenceProofOptions]},
			{name: "evidence events", summary: "export an evidence log's events (filtered) as JSON lines or PREMIS 3 XML", usage: evidenceEventsUsage, flags: bind[evidenceEventsOptions]},
			{name: "evidence append", summary: "derive the evidence events from the bit log and the audit log and append them to the log (cron, one at a time)", usage: evidenceAppendUsage, flags: bind[evidenceAppendOptions]},
			{name: "evidence keygen", summary: "make an evidence log's key pair: the secret signer key and the public verifier key", usage: evidenceKeygenUsage, flags: bind[evidenceKeygenOptions]},
			{name: "evidence pack", summary: "write a dated bundle of a period's evidence with the NDSA Levels matrix, for an auditor", usage: evidencePackUsage, flags: bind[evidencePackOptions]},
			{name: "evidence check-proof", summary: "check an inclusion proof file with the log's public key", usage: evidenceCheckProofUsage, flags: bind[evidenceCheckProofOptions]},
		}},
	}
}

// commands indexes the tree's commands by name; groupSummaries its groups'
// summaries.
var commands, groupSummaries = indexTree(commandTree())

// indexTree indexes the commands of tree by name and the summaries of its
// groups. A command named twice, or outside its group, is a mistake in
// commandTree.
func indexTree(tree []group) (map[string]*command, map[string]string) {
	cmds, summaries := map[string]*command{}, map[string]string{}
	for _, g := range tree {
		if g.summary != "" {
			summaries[g.name] = g.summary
		}
		for _, c := range g.commands {
			if g.name != "" && c.name != g.name && !strings.HasPrefix(c.name, g.name+" ") {
				panic("millctl: command " + c.name + " listed in group " + g.name)
			}
			if _, dup := cmds[c.name]; dup {
				panic("millctl: command listed twice: " + c.name)
			}
			cmds[c.name] = c
		}
	}
	return cmds, summaries
}
