package policy_test

import (
	"errors"
	"testing"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// FuzzParseAccounts: duplication-accounts.json either parses to distinct,
// non-empty account ids that survive MarshalAccounts → ParseAccounts, or
// fails with positioned errors naming the file.
func FuzzParseAccounts(f *testing.F) {
	for _, s := range []string{`["acme","beta"]`, `[]`, `["a","a"]`, `[""]`, `["a",]`, `{"a":1}`, `[1]`, `["a"] x`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		accts, err := policy.ParseAccounts(policy.AccountsFile, data)
		if err != nil {
			var pe *jsonpos.Error
			if !errors.As(err, &pe) || pe.File != policy.AccountsFile || pe.Line < 1 || pe.Col < 1 {
				t.Fatalf("ParseAccounts(%q): %v is not a positioned error naming the file", data, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, a := range accts {
			if a == "" || seen[a] {
				t.Fatalf("ParseAccounts(%q) = %q: empty or repeated id", data, accts)
			}
			seen[a] = true
		}
		b, err := policy.MarshalAccounts(accts)
		if err != nil {
			t.Fatalf("MarshalAccounts(%q): %v", accts, err)
		}
		back, err := policy.ParseAccounts(policy.AccountsFile, b)
		if err != nil || len(back) != len(accts) {
			t.Fatalf("round trip of %q: %q, %v", accts, back, err)
		}
		for i := range back {
			if back[i] != accts[i] {
				t.Fatalf("round trip of %q: %q", accts, back)
			}
		}
	})
}
