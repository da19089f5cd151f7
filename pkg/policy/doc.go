// Package policy reads, checks and stores DuraCloud duplication policies
// (docs/ARCHITECTURE.md, Duplication).
//
// Files, in the config bucket (optionally under a key prefix) or a local
// directory: duplication-accounts.json, a JSON array of the account ids
// considered for duplication (["account1", "account2"]), and one
// {account}-duplication-policy.json per account:
//
//	{
//	  "spaceDuplicationStorePolicies": {
//	    "spaceA": [{"srcStoreId": "1", "destStoreId": "2"}],
//	    "spaceB": [{"srcStoreId": "1", "destStoreId": "2"},
//	               {"srcStoreId": "1", "destStoreId": "3"}]
//	  },
//	  "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}],
//	  "spacesToIgnore": ["scratch"]
//	}
//
// A space listed in spaceDuplicationStorePolicies with a non-empty list uses
// that list; any other space — including one listed with an empty list, as in
// DuraCloud's Java Mill — uses defaultPolicies. Spaces in spacesToIgnore and
// spaces whose id starts with "x-" (DuraCloud's system spaces) are never
// duplicated: spacesToIgnore is the way to say "never duplicate this space".
//
// The store policies of one space (or the default ones) must not form a
// cycle (1→2 with 2→1, or longer), nor give one destination two sources
// (1→3 with 2→3: what one source lacks, its tasks would delete at the
// destination, and the other's would copy back): Parse refuses both, naming
// the cycle or the two store policies, so every loader, `millctl policy
// validate` and `millctl policy put` do.
//
// Every error in a file names the file, line and column (Parse,
// ParseAccounts), the comma itself for a trailing comma; a file must be
// UTF-8 without a byte order mark and at most MaxFileSize bytes.
// Repository abstracts where the files live (NewDir, NewS3) and Cache keeps
// them in memory, refreshed every DefaultRefresh, reading each file once
// however many callers want it at the same time.
//
// # The policies in force
//
// An account is duplicated when it is listed in duplication-accounts.json
// and has a policy file: InForce answers that for every reader (the audit
// processor, the dup processor, the dup producer, millctl), so they all
// agree. Authorize checks one duplication (account, space, source store,
// destination store) against the policies in force and refuses it with a
// *Refusal naming the rule it breaks ("policy: no-store-policy: …");
// Policy.MayDestroy refuses deleting from or overwriting a store that is the
// source of a store policy of the space.
package policy
