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
// cycle (1→2 with 2→1, or longer): Parse refuses it, naming the cycle, so
// every loader, `millctl policy validate` and `millctl policy put` do.
//
// Every error in a file names the file, line and column (Parse,
// ParseAccounts). Repository abstracts where the files live (NewDir, NewS3)
// and Cache keeps them in memory, refreshed every DefaultRefresh.
package policy
